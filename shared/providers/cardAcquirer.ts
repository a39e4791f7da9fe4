import { HttpProviderBase, type HttpProviderBaseOptions } from './http';
import { retryable } from './errors';
import type { ProviderAccepted } from './types';
import type { ProviderEndpoint } from './connector';
import type { Currency, Environment } from '../vocabulary';
import type { CardDetails } from '../db/rows';

/**
 * The card acquirer's adapter, sandbox and live alike (docs/decisions.md#cards-hosted-checkout). Outcomes come by
 * signed callback as a mobile-money provider's do (same protocol, kind `card_payment`).
 *
 *   POST {base}/v1/charges  {external_id, token, amount, currency, description, return_url, callback_url}
 *        headers: Authorization: Bearer <api key>, Idempotency-Key: <external_id>
 *        → 2xx {provider_ref, outcome: approved|declined|challenge, challenge_url, card: {brand, last4, exp_month, exp_year},
 *               failure_code, failure_message}
 *        → 4xx {error: {code, message}}: token-invalid, token-expired, token-used, token-foreign (the client may try again)
 *   GET  {base}/v1/transactions/{external_id}   (as the mobile-money protocol)
 */

export const cardAcquirerIdFor = (environment: Environment) => (environment === 'test' ? 'card-sandbox' : 'card');

/** Refusals of the token, not of the card: the payment stays payable and the client tries again. */
export const TOKEN_ERRORS = ['token-invalid', 'token-expired', 'token-used', 'token-foreign'] as const;

export interface ChargeRequest {
  paymentId: string;
  token: string;
  amount: number;
  currency: Currency;
  description: string | null;
}

export interface ChargeAnswer extends ProviderAccepted {
  outcome: 'approved' | 'declined' | 'challenge';
  /** the issuer's page (on the acquirer's origin) when 3-D Secure is required */
  challengeUrl: string | null;
  card: CardDetails | null;
  failureCode: string | null;
  failureMessage: string | null;
}

export interface CardAcquirer extends ProviderEndpoint {
  charge(req: ChargeRequest): Promise<ChargeAnswer>;
}

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

export class HttpCardAcquirer extends HttpProviderBase implements CardAcquirer {
  constructor(
    opts: HttpProviderBaseOptions,
    /** the service's public URL: the issuer's challenge sends the client back to {baseUrl}/checkout/{id}/3ds-return */
    private readonly baseUrl: string,
  ) {
    super(opts);
  }

  async charge(req: ChargeRequest): Promise<ChargeAnswer> {
    const { providerRef, body } = await this.create('/v1/charges', req.paymentId, {
      token: req.token,
      amount: req.amount,
      currency: req.currency,
      description: req.description,
      return_url: `${this.baseUrl}/checkout/${req.paymentId}/3ds-return`,
    });
    const outcome = body.outcome;
    if (outcome !== 'approved' && outcome !== 'declined' && outcome !== 'challenge') {
      throw retryable('provider-protocol', `${this.id} answered an unknown charge outcome`);
    }
    let challengeUrl: string | null = null;
    if (outcome === 'challenge') {
      // the checkout frames this page: it must be on the acquirer's own origin (the page's CSP allows no other)
      const raw = str(body.challenge_url, 2048);
      if (!raw || !URL.canParse(raw) || new URL(raw).origin !== new URL(this.opts.url).origin) {
        throw retryable('provider-protocol', `${this.id} asked for 3-D Secure without a challenge page on its origin`);
      }
      challengeUrl = raw;
    }
    return {
      providerRef,
      outcome,
      challengeUrl,
      card: cardOf(body.card),
      failureCode: outcome === 'declined' ? (str(body.failure_code, 64) ?? 'card-declined') : null,
      failureMessage: outcome === 'declined' ? (str(body.failure_message) ?? 'The card was declined') : null,
    };
  }
}
