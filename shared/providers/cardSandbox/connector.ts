import { HttpProviderBase, type HttpProviderBaseOptions } from '../sandbox/connector';
import { CURRENCY_EXPONENT } from '../amounts';
import { permanent, retryable, ProviderError } from '../errors';
import {
  SourceRefused,
  type CardCapabilities,
  type CardRefundAnswer,
  type CardRefundRequest,
  type CardConnector,
  type CardForm,
  type CardFormRequest,
  type CardPageOrigins,
  type ChargeAnswer,
  type ChargeRequest,
  type PaymentSourceRule,
} from '../cardConnector';
import { CURRENCIES, type Currency } from '../../vocabulary';
import type { CardDetails } from '../../db/rows';

/**
 * The card sandbox's connector (test keys; docs/decisions.md#cards-hosted-checkout): the
 * service's own provider protocol (shared/providers/sandbox/protocol.ts), spoken by the sandbox acquirer
 * (shared/cards/sandbox/acquirer.ts), with the sandbox vault's card fields
 * (shared/cards/sandbox/vault.ts) on the checkout page.
 * Outcomes come by signed callback as the mobile-money sandbox's do (kind `card_payment`).
 *
 *   POST {acquirer}/v1/charges  {external_id, token, amount, currency, description, return_url, callback_url}
 *        headers: Authorization: Bearer <api key>, Idempotency-Key: <external_id>
 *        → 2xx {provider_ref, outcome: approved|declined|challenge, challenge_url, card: {brand, last4, exp_month, exp_year},
 *               failure_code, failure_message}
 *        → 4xx {error: {code, message}}: token-invalid, token-expired, token-used, token-foreign (the client may try again)
 *   POST {acquirer}/v1/refunds  {external_id: re_…, payment_external_id, payment_provider_ref, amount, currency,
 *        partial, reason, callback_url}   headers as a charge's
 *        → 2xx {provider_ref, status: pending}: the outcome follows by signed callback (kind `refund`)
 *        → 4xx {error: {code, message}}: refund-exceeds-captured, payment-not-captured, payment-unknown (final)
 *   GET  {acquirer}/v1/transactions/{external_id}   (as the mobile-money protocol; a charge or a refund)
 */

/** The card sandbox's provider id: a payment's `provider`, /callbacks/card-sandbox. */
export const CARD_SANDBOX_ID = 'card-sandbox';

/** Refusals of the token, not of the card: the payment stays payable and the client tries again. */
export const TOKEN_ERRORS = ['token-invalid', 'token-expired', 'token-used', 'token-foreign'] as const;

/** A vault token as the checkout may post it (its content is the vault's business). */
export const TOKEN_PATTERN = /^tok_[A-Za-z0-9_-]{8,64}$/;

function cardOf(v: unknown): CardDetails | null {
  const c = v as Partial<CardDetails> | null | undefined;
  if (!c || typeof c !== 'object') return null;
  if (typeof c.brand !== 'string' || !/^[a-z_]{1,20}$/.test(c.brand)) return null;
  if (typeof c.last4 !== 'string' || !/^[0-9]{4}$/.test(c.last4)) return null;
  if (!Number.isInteger(c.exp_month) || c.exp_month! < 1 || c.exp_month! > 12) return null;
  if (!Number.isInteger(c.exp_year) || c.exp_year! < 2000 || c.exp_year! > 2200) return null;
  return { brand: c.brand, last4: c.last4, exp_month: c.exp_month!, exp_year: c.exp_year! };
}

const str = (v: unknown, max = 500) => (typeof v === 'string' && v.length <= max ? v : null);

export interface CardSandboxConnectorOptions extends HttpProviderBaseOptions {
  /** the vault browsers reach (its origin serves the card fields) */
  vaultUrl: string;
  /** the service's public URL: the issuer's challenge sends the client back to {serviceUrl}/checkout/{id}/3ds-return */
  serviceUrl: string;
}

export class CardSandboxConnector extends HttpProviderBase implements CardConnector {
  readonly method = 'card' as const;
  /** the sandbox takes every amount its currencies can carry */
  readonly capabilities: CardCapabilities = {
    currencies: CURRENCIES,
    amountRule: (currency: Currency) => ({ decimals: CURRENCY_EXPONENT[currency], min: null, max: null }),
    partialRefunds: true,
    void: false,
  };
  readonly origins: CardPageOrigins;
  readonly source: PaymentSourceRule = { field: 'token', pattern: TOKEN_PATTERN, description: 'a card token (tok_…)' };

  constructor(private readonly card: CardSandboxConnectorOptions) {
    super(card);
    this.origins = { frames: [...new Set([new URL(card.vaultUrl).origin, new URL(card.url).origin])], scripts: [] };
  }

  cardForm(req: CardFormRequest): Promise<CardForm> {
    return Promise.resolve({
      kind: 'vault-frame',
      frameUrl: `${this.card.vaultUrl}/fields?payment=${encodeURIComponent(req.paymentId)}&lang=${req.lang}`,
      vaultOrigin: new URL(this.card.vaultUrl).origin,
    });
  }

  async charge(req: ChargeRequest): Promise<ChargeAnswer> {
    let created;
    try {
      created = await this.create('/v1/charges', req.paymentId, {
        token: req.source,
        amount: req.amount,
        currency: req.currency,
        description: req.description,
        return_url: `${this.card.serviceUrl}/checkout/${req.paymentId}/3ds-return`,
      });
    } catch (err) {
      const code = (err as { code?: unknown; retryable?: unknown }).code;
      if ((err as { retryable?: unknown }).retryable === false && (TOKEN_ERRORS as readonly unknown[]).includes(code))
        throw new SourceRefused(code as string, (err as Error).message);
      throw err;
    }
    const { providerRef, body } = created;
    const outcome = body.outcome;
    if (outcome !== 'approved' && outcome !== 'declined' && outcome !== 'challenge') {
      throw retryable('provider-protocol', `${this.id} answered an unknown charge outcome`);
    }
    let challenge: ChargeAnswer['challenge'] = null;
    if (outcome === 'challenge') {
      // the checkout frames this page: it must be on the acquirer's own origin (the page's CSP allows no other)
      const raw = str(body.challenge_url, 2048);
      if (!raw || !URL.canParse(raw) || new URL(raw).origin !== new URL(this.opts.url).origin) {
        throw retryable('provider-protocol', `${this.id} asked for 3-D Secure without a challenge page on its origin`);
      }
      challenge = { url: raw };
    }
    return {
      providerRef,
      outcome,
      challenge,
      card: cardOf(body.card),
      failureCode: outcome === 'declined' ? (str(body.failure_code, 64) ?? 'card-declined') : null,
      failureMessage: outcome === 'declined' ? (str(body.failure_message) ?? 'The card was declined') : null,
    };
  }

  /** A refund is answered `pending` (its signed callback follows); a refusal of the acquirer is final (`provider-refused`). */
  async refund(req: CardRefundRequest): Promise<CardRefundAnswer> {
    try {
      const { providerRef } = await this.create('/v1/refunds', req.refundId, {
        payment_external_id: req.paymentId,
        payment_provider_ref: req.paymentProviderRef,
        amount: req.amount,
        currency: req.currency,
        partial: req.partial,
        reason: req.reason,
      });
      return { providerRef, outcome: 'pending', failureCode: null, failureMessage: null };
    } catch (err) {
      if (err instanceof ProviderError && !err.retryable)
        throw permanent('provider-refused', `${this.id} refused the refund (${err.code}): ${err.message}`);
      throw err;
    }
  }
}
