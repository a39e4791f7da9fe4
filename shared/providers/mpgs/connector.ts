import { createHash } from 'node:crypto';
import type { CardDetails } from '../../db/rows';
import type { HttpClient } from '../../httpClient';
import type { Currency } from '../../vocabulary';
import { CURRENCY_EXPONENT } from '../amounts';
import {
  SourceRefused,
  type CardCapabilities,
  type CardConnector,
  type CardForm,
  type CardFormRequest,
  type CardPageOrigins,
  type ChargeAnswer,
  type CardRefundAnswer,
  type CardRefundRequest,
  type ChargeRequest,
  type PaymentSourceRule,
} from '../cardConnector';
import type { CallbackAnswer, CallbackRequest, NormalisedCallback, OperationRef, Verification } from '../connector';
import { FAILURE_CODES, type FailureCode } from '../failureCodes';
import { permanent, ProviderError, retryable } from '../errors';
import type { EchoedAmount, ProviderStatus } from '../types';
import {
  MpgsClient,
  notificationIdOf,
  parseNotification,
  verifyNotification,
  type MpgsLog,
  type Settled,
} from './client';
import { classify } from './codes';
import { mpgsAskRefund, mpgsRefund } from './refund';
import type { MpgsSettings } from './settings';
import { authTransactionId, decideAuthentication, orderIdOf, payTransactionId, type TransactionView } from './wire';

/**
 * The Mastercard Gateway as a card connector (README.md in this folder; docs/adding-a-connector.md):
 * Hosted Session fields on the checkout page, EMV 3-D Secure, then PAY, server to server.
 *
 * - `cardForm`: CREATE_SESSION, UPDATE_SESSION (the order's amount, currency, id); the page loads
 *   session.js from the gateway and posts only the session id (`source`).
 * - `charge`: INITIATE_AUTHENTICATION then AUTHENTICATE_PAYER (ids `auth-{attempt}`); frictionless:
 *   PAY (`pay-{attempt}`) at once; a challenge: the gateway's redirect HTML, served by the checkout
 *   at `challenge.url` on the service's own origin; authentication refused: declined
 *   `authentication-failed`, no PAY.
 * - `ask`: RETRIEVE_ORDER: a PAY found is followed; an authentication the gateway's record says
 *   succeeded (the browser came back from the challenge, or a notification said so) is paid now,
 *   with the same ids (the client settles a repeated id by a retrieve: never a second charge).
 * - notifications: X-Notification-Secret checked in constant time, then `unsigned`: the kernel
 *   confirms each by `ask` before applying anything (shared/providers/mpgs/README.md#unclear-points-and-the-choices-made, 9).
 *
 * Card refunds (the operator's, docs/decisions.md#operator-admin-api): REFUND on the payment's
 * order with our refund id as the transaction id, asked by RETRIEVE_TRANSACTION (./refund.ts).
 */

/** A Hosted Session id as the gateway writes it, e.g. SESSION0002776555072I3703960J55. */
export const SESSION_PATTERN = /^SESSION[0-9A-Za-z]{8,57}$/;

export interface MpgsConnectorOptions {
  settings: MpgsSettings;
  client: HttpClient;
  /** the service's public URL: the 3-D Secure return ({serviceUrl}/checkout/{id}/3ds-return) and challenge page */
  serviceUrl: string;
  log?: MpgsLog;
}

type Asked = ProviderStatus & EchoedAmount;

export class MpgsConnector implements CardConnector {
  readonly id = 'mpgs';
  readonly connector = 'mpgs' as const;
  readonly environment = 'live' as const;
  readonly method = 'card' as const;
  readonly capabilities: CardCapabilities;
  readonly origins: CardPageOrigins;
  readonly source: PaymentSourceRule = {
    field: 'session',
    pattern: SESSION_PATTERN,
    description: 'a gateway session id (SESSION…)',
    browser: true,
  };
  /** the gateway client (./client.ts), shared with the card refund (./refund.ts) */
  readonly client: MpgsClient;

  constructor(private readonly opts: MpgsConnectorOptions) {
    const s = opts.settings;
    this.settings = s;
    this.client = new MpgsClient({ ...s, client: opts.client, log: opts.log });
    this.capabilities = {
      currencies: s.currencies,
      amountRule: (currency: Currency) => {
        const l = s.limits[currency];
        if (!s.currencies.includes(currency) || !l) return undefined;
        return { decimals: CURRENCY_EXPONENT[currency], min: l.min, max: l.max };
      },
      partialRefunds: true,
      void: true,
    };
    // the gateway's session.js, its field iframes and its 3-D Secure pages: its origin, and no other
    const origin = new URL(s.gatewayUrl).origin;
    this.origins = { frames: [origin], scripts: [origin] };
  }

  readonly settings: MpgsSettings;

  /** session.js of the configured gateway (Hosted Session reference: /form/version/{v}/merchant/{id}/session.js) */
  get scriptUrl(): string {
    const s = this.settings;
    return `${s.gatewayUrl}/form/version/${s.apiVersion}/merchant/${encodeURIComponent(s.merchantId)}/session.js`;
  }

  async cardForm(req: CardFormRequest): Promise<CardForm> {
    const { sessionId } = await this.client.createSession();
    await this.client.updateSession(sessionId, req.amount, req.currency, orderIdOf(req.paymentId));
    return { kind: 'hosted-session', scriptUrl: this.scriptUrl, sessionId, data: { gateway: 'mpgs' } };
  }

  async charge(req: ChargeRequest): Promise<ChargeAnswer> {
    const attempt = req.attempt ?? 1;
    const orderId = orderIdOf(req.paymentId);
    if (!this.settings.threeDSecure) return this.pay(req, attempt, undefined);
    const authId = authTransactionId(attempt);
    let t = await this.refusedAsSource(() =>
      this.client.initiateAuthentication(req.source, orderId, authId, req.currency),
    );
    for (let step = 0; step < 3; step++) {
      const d = decideAuthentication(t, this.settings.whenUnavailable);
      switch (d.next) {
        case 'authenticate': {
          if (!req.browser) throw permanent('provider-protocol', 'mpgs: AUTHENTICATE_PAYER needs the browser details');
          const browser = req.browser;
          t = await this.refusedAsSource(() =>
            this.client.authenticatePayer(
              req.source,
              orderId,
              authId,
              req.amount,
              req.currency,
              browser,
              `${this.opts.serviceUrl}/checkout/${req.paymentId}/3ds-return`,
            ),
          );
          continue;
        }
        case 'challenge':
          return {
            providerRef: orderId,
            outcome: 'challenge',
            challenge: { url: `${this.opts.serviceUrl}/checkout/${req.paymentId}/3ds-challenge`, html: d.html },
            // the authentication's answer names the session's card as well: the payment shows it from now on
            card: t.card,
            failureCode: null,
            failureMessage: null,
          };
        case 'pay':
          return this.pay(req, attempt, d.authenticated ? authId : undefined);
        case 'fail':
          return declined(orderId, 'authentication-failed', d.why, t.card);
        case 'unknown':
          throw retryable('provider-unknown-outcome', `mpgs authentication of ${orderId}/${authId}: ${d.why}`);
      }
    }
    throw retryable('provider-unknown-outcome', `mpgs authentication of ${orderId}/${authId} did not settle`);
  }

  /** PAY the attempt's session once (pay-{attempt}): approved is final (the gateway's own answer), a decline too. */
  private async pay(req: ChargeRequest, attempt: number, authenticationTransactionId?: string): Promise<ChargeAnswer> {
    const orderId = orderIdOf(req.paymentId);
    const t = await this.refusedAsSource(() =>
      this.client.pay(
        orderId,
        payTransactionId(attempt),
        this.payInput(req.source, req.amount, req.currency, authenticationTransactionId),
      ),
    );
    const outcome = classify(t.result, t.gatewayCode, t.settledBy === 'retrieve');
    if (outcome.state === 'failed')
      return declined(orderId, outcome.failureCode, `gatewayCode ${t.gatewayCode}`, t.card);
    if (outcome.state === 'succeeded' && !this.otherAmount(t, req.amount, req.currency))
      return {
        providerRef: orderId,
        outcome: 'approved',
        settled: true,
        challenge: null,
        card: t.card,
        failureCode: null,
        failureMessage: null,
      };
    // approved for another amount, or not known yet: pending, asked about (and listed past its window), never failed here
    return {
      providerRef: orderId,
      outcome: 'approved',
      settled: false,
      challenge: null,
      card: t.card,
      failureCode: null,
      failureMessage: null,
    };
  }

  private payInput(session: string, minor: number, currency: Currency, authenticationTransactionId?: string) {
    return {
      sessionId: session,
      minor,
      currency,
      ...(authenticationTransactionId ? { authenticationTransactionId } : {}),
      ...(this.settings.notificationUrl ? { notificationUrl: this.settings.notificationUrl } : {}),
    };
  }

  private otherAmount(t: TransactionView, minor: number, currency: Currency): boolean {
    return (t.amount !== null && t.amount !== minor) || (t.currency !== null && t.currency !== currency);
  }

  /**
   * A gateway refusal of the operations that read the session (a session with no card, expired,
   * or past its authentication limit) refuses the payment source, not the card: the client enters
   * the card again on the page. Never after PAY was answered.
   */
  private async refusedAsSource(op: () => Promise<Settled>): Promise<Settled> {
    try {
      return await op();
    } catch (err) {
      if (err instanceof ProviderError && !err.retryable && err.code === 'provider-refused')
        throw new SourceRefused('card', err.message);
      throw err;
    }
  }

  // ---- card refunds ------------------------------------------------------------------------

  refund(req: CardRefundRequest): Promise<CardRefundAnswer> {
    return mpgsRefund(this.client, req);
  }

  // ---- the kernel's questions -------------------------------------------------------------

  async ask(op: OperationRef): Promise<Asked> {
    if (op.kind === 'refund') {
      if (!op.paymentId) throw permanent('provider-protocol', 'mpgs asks a refund by its payment: none given');
      return mpgsAskRefund(this.client, { paymentId: op.paymentId, refundId: op.id });
    }
    if (op.kind !== 'card_payment')
      throw permanent('provider-protocol', 'mpgs carries card payments and their refunds only');
    const orderId = orderIdOf(op.id);
    const order = await this.client.retrieveOrder(orderId);
    if (!order) return { state: 'not_found' };
    const ctx = op.card;
    const attempt = ctx?.attempt ?? 1;
    const payId = payTransactionId(attempt);
    const paid = order.transactions.find((t) => t.transactionId === payId);
    if (paid) return this.statusOf(paid, orderId);
    // any other PAY of the order (an earlier attempt's): followed as well
    const other = order.transactions.find((t) => t.type === 'PAYMENT');
    if (other) return this.statusOf(other, orderId);
    const authId = authTransactionId(attempt);
    const auth = order.transactions.find((t) => t.transactionId === authId);
    if (!auth) return { state: 'not_found' };
    // re-read the authentication itself: never what the browser posted
    const current = (await this.client.retrieveTransaction(orderId, authId)) ?? auth;
    const d = decideAuthentication(current, this.settings.whenUnavailable);
    if (d.next === 'fail') return failedWith(orderId, 'authentication-failed', d.why);
    if (d.next === 'pay') {
      if (!ctx?.session) return { state: 'pending', providerRef: orderId };
      const t = await this.client.pay(
        orderId,
        payId,
        this.payInput(ctx.session, ctx.amount, op.currency, d.authenticated ? authId : undefined),
      );
      return this.statusOf(t, orderId, t.settledBy === 'retrieve');
    }
    // the client is still before the issuer's challenge, or left it
    return ctx?.abandoned ? { state: 'expired', providerRef: orderId } : { state: 'pending', providerRef: orderId };
  }

  private statusOf(t: TransactionView, orderId: string, retrieved = true): Asked {
    const echoed = { amount: t.amount, currency: t.currency };
    const outcome = classify(t.result, t.gatewayCode, retrieved);
    if (outcome.state === 'succeeded') return { state: 'succeeded', providerRef: orderId, ...echoed };
    if (outcome.state === 'failed')
      return { ...failedWith(orderId, outcome.failureCode, `gatewayCode ${t.gatewayCode}`), ...echoed };
    return { state: 'pending', providerRef: orderId };
  }

  verifyCallback(req: CallbackRequest): Promise<Verification> {
    // the secret is all a notification carries: never applied on its word, confirmed by `ask`
    return Promise.resolve(verifyNotification(req.headers, this.settings.notificationSecret) ? 'unsigned' : 'invalid');
  }

  parseCallback(raw: Buffer, headers: CallbackRequest['headers']): NormalisedCallback | 'ignore' {
    const t = parseNotification(raw);
    if (!/^pay_[0-9a-f-]{36}$/.test(t.orderId)) return 'ignore';
    // a REFUND notification names our refund as its transaction: confirmed by the refund's ask like any other
    if (t.type === 'REFUND') {
      if (!/^re_[0-9a-f-]{36}$/.test(t.transactionId)) return 'ignore';
      const outcome = classify(t.result, t.gatewayCode, true);
      if (outcome.state === 'unknown') return 'ignore';
      const eventId = notificationIdOf(headers) ?? createHash('sha256').update(raw).digest('hex');
      return {
        eventId: `mpgs:${eventId}`,
        kind: 'refund',
        objectId: t.transactionId,
        providerRef: `${t.orderId}/${t.transactionId}`,
        amount: t.amount,
        currency: t.currency,
        status: outcome.state,
        failureCode: outcome.state === 'failed' ? outcome.failureCode : null,
        failureMessage: outcome.state === 'failed' ? FAILURE_CODES[outcome.failureCode] : null,
      };
    }
    const eventId = notificationIdOf(headers) ?? createHash('sha256').update(raw).digest('hex');
    const base = {
      eventId: `mpgs:${eventId}`,
      kind: 'card_payment' as const,
      objectId: t.orderId,
      providerRef: t.orderId,
      amount: t.amount,
      currency: t.currency,
    };
    if (t.type === 'PAYMENT') {
      const outcome = classify(t.result, t.gatewayCode, true);
      if (outcome.state === 'succeeded')
        return { ...base, status: 'succeeded', failureCode: null, failureMessage: null };
      if (outcome.state === 'failed')
        return {
          ...base,
          status: 'failed',
          failureCode: outcome.failureCode,
          failureMessage: FAILURE_CODES[outcome.failureCode],
        };
      return 'ignore';
    }
    // AUTHENTICATION notifications decide nothing: the charge job, the 3-D Secure return and the
    // sweep's ask (a retrieve) carry an authentication on to PAY. Voids are never sent.
    return 'ignore';
  }

  callbackAnswer(): CallbackAnswer {
    return { status: 200 };
  }
}

function declined(orderId: string, code: FailureCode, why: string, card: CardDetails | null): ChargeAnswer {
  return {
    providerRef: orderId,
    outcome: 'declined',
    challenge: null,
    card,
    failureCode: code,
    failureMessage: `${FAILURE_CODES[code]} (${why})`.slice(0, 300),
  };
}

function failedWith(orderId: string, code: FailureCode, why: string): Asked {
  return {
    state: 'failed',
    providerRef: orderId,
    failureCode: code,
    failureMessage: `${FAILURE_CODES[code]} (${why})`.slice(0, 300),
  };
}
