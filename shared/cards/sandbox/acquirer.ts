import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import path from 'node:path';
import type { Clock } from '../../clock';
import type { CardDetails } from '../../db/rows';
import { safeEqual } from '../../crypto/secrets';
import type { Logger } from '../../logger';
import { TOKEN_ERRORS } from '../../providers/cardSandbox/connector';
import type { CallbackWire } from '../../providers/sandbox/protocol';
import { createCallbackSender } from '../../providers/sandbox/callbackSender';
import { escapeHtml, formatAmount, maskToken } from '../../checkout/html';
import { sandboxCardBehaviour, sandboxRefundFault, type SandboxRefundFault } from './cards';
import { SandboxError, readBody, readJson, sandboxServer, sendJson, sendText } from '../../providers/sandbox/http';

/**
 * The sandbox card acquirer, on its own origin. It charges a vault token (redeemed at the vault,
 * server to server) with our payment id as its idempotency key and answers at once: approved
 * (its signed callback follows), declined, or 3-D Secure required with the issuer's test page
 * (`/acs/{ref}`), which reports the outcome by callback and sends the client's frame back to
 * our `/checkout/{id}/3ds-return`; a challenge unanswered for `threeDsWindowMs` is `expired`.
 * It refunds a succeeded charge in full or in part (`POST /v1/refunds`, our refund id as the
 * idempotency key, at most what is left of the charge), answers `pending`, and reports the
 * outcome by signed callback (kind `refund`) as a charge's. State lives in memory: a simulator,
 * restarted empty.
 */

export interface AcquirerOptions {
  apiKey: string;
  callbackSecret: string;
  /** the vault it redeems tokens at, and the key it does so with */
  vaultUrl: string;
  vaultApiKey: string;
  /** the acquirer's own public URL (its challenge pages are there) */
  publicUrl: string;
  /** the checkout's origin: the only page that may frame the issuer's challenge */
  serviceOrigin: string;
  callbackDelayMs: number;
  threeDsWindowMs: number;
  /** what decides when a challenge is over (a test moves it: shared/clock.ts) */
  clock: Clock;
  log: Logger;
}

interface Charge {
  externalId: string;
  providerRef: string;
  amount: number;
  currency: string;
  callbackUrl: string;
  returnUrl: string;
  card: CardDetails;
  outcome: 'approved' | 'declined' | 'challenge';
  status: 'pending' | 'succeeded' | 'failed';
  failureCode: string | null;
  failureMessage: string | null;
  challengeEndsAt: number;
  eventId: string;
  requests: number;
  callbacksDelivered: number;
  /** minor units refunded so far (refunds made, whatever their callback) */
  refunded: number;
  refundFault: SandboxRefundFault;
}

interface SandboxRefund {
  externalId: string;
  charge: Charge;
  providerRef: string;
  amount: number;
  callbackUrl: string;
  status: 'pending' | 'succeeded';
  /** its outcome is on its way (not while its first answer was lost) */
  reported: boolean;
  eventId: string;
  requests: number;
  callbacksDelivered: number;
}

const KEEP_MS = 24 * 3600 * 1000;
const CHARGE_ID = /^pay_[0-9a-f-]{36}$/;
const REFUND_ID = /^re_[0-9a-f-]{36}$/;
const TOKEN = /^tok_[A-Za-z0-9_-]{1,64}$/;
const acsStyle = readFileSync(path.join(__dirname, 'assets', 'acs.css'), 'utf8');

export function createAcquirerServer(opts: AcquirerOptions): Server {
  const charges = new Map<string, Charge>();
  const byRef = new Map<string, Charge>();
  const refunds = new Map<string, SandboxRefund>();
  const callbacks = createCallbackSender(opts.callbackSecret, opts.log, opts.clock);
  const { later } = callbacks;

  const expired = (c: Charge, now = opts.clock.now()) =>
    c.outcome === 'challenge' && c.status === 'pending' && now >= c.challengeEndsAt;

  /** Decides a pending charge; its signed callback follows after `delayMs`. */
  function conclude(
    c: Charge,
    status: 'succeeded' | 'failed',
    failureCode: string | null,
    failureMessage: string | null,
    delayMs: number,
  ): void {
    Object.assign(c, { status, failureCode, failureMessage });
    later(delayMs, () => {
      const body: CallbackWire = {
        event_id: c.eventId,
        kind: 'card_payment',
        external_id: c.externalId,
        provider_ref: c.providerRef,
        status,
        failure_code: failureCode,
        failure_message: failureMessage,
        occurred_at: Math.floor(opts.clock.now() / 1000),
      };
      void callbacks.send(c.callbackUrl, body, { onDelivered: () => c.callbacksDelivered++ });
    });
  }

  const answer = (c: Charge) => ({
    provider_ref: c.providerRef,
    outcome: c.outcome,
    challenge_url: c.outcome === 'challenge' ? `${opts.publicUrl}/acs/${c.providerRef}` : null,
    card: c.card,
    failure_code: c.outcome === 'declined' ? c.failureCode : null,
    failure_message: c.outcome === 'declined' ? c.failureMessage : null,
  });

  /** The card behind a token, from the vault (once); a refused token is the vault's code. */
  async function redeem(token: string, payment: string): Promise<CardDetails & { number: string }> {
    let res: Response;
    try {
      res = await fetch(`${opts.vaultUrl}/v1/tokens/${encodeURIComponent(token)}/redeem`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${opts.vaultApiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ payment }),
        signal: AbortSignal.timeout(5000),
      });
    } catch {
      throw new SandboxError(503, 'vault-unavailable', 'the vault did not answer');
    }
    const body = (await res.json().catch(() => ({}))) as any;
    if (res.ok) return body;
    const code = body?.error?.code;
    if (TOKEN_ERRORS.includes(code)) throw new SandboxError(422, code, body.error.message ?? 'token refused');
    throw new SandboxError(503, 'vault-unavailable', `the vault answered ${res.status}`);
  }

  async function charge(req: IncomingMessage): Promise<[number, unknown]> {
    const body = await readJson(req);
    const externalId = body.external_id;
    if (typeof externalId !== 'string' || !CHARGE_ID.test(externalId))
      throw new SandboxError(400, 'invalid-request', 'external_id must be our payment id');
    if (req.headers['idempotency-key'] !== externalId)
      throw new SandboxError(400, 'invalid-request', 'Idempotency-Key must equal external_id');
    const existing = charges.get(externalId);
    if (existing) {
      existing.requests++;
      return [200, answer(existing)];
    }
    const { token, amount, currency, callback_url: callbackUrl, return_url: returnUrl } = body;
    if (typeof token !== 'string' || !TOKEN.test(token))
      throw new SandboxError(422, 'token-invalid', 'token must be a vault token');
    if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 1)
      throw new SandboxError(400, 'invalid-amount', 'amount must be a positive integer');
    if (currency !== 'USD' && currency !== 'CDF')
      throw new SandboxError(400, 'invalid-currency', 'currency must be USD or CDF');
    for (const [name, v] of [
      ['callback_url', callbackUrl],
      ['return_url', returnUrl],
    ] as const) {
      if (typeof v !== 'string' || !/^https?:\/\//.test(v))
        throw new SandboxError(400, 'invalid-request', `${name} must be an http(s) URL`);
    }
    const card = await redeem(token, externalId);
    opts.log.info({ externalId, token: maskToken(token), brand: card.brand }, 'charge');
    // another request with the same key may have been answered while the vault was asked
    const raced = charges.get(externalId);
    if (raced) return [200, answer(raced)];
    const behaviour = sandboxCardBehaviour(card.number);
    const declined = behaviour === 'decline';
    const c: Charge = {
      externalId,
      providerRef: `SBX-CARD-${randomUUID()}`,
      amount,
      currency,
      callbackUrl: callbackUrl as string,
      returnUrl: returnUrl as string,
      card: { brand: card.brand, last4: card.last4, exp_month: card.exp_month, exp_year: card.exp_year },
      outcome: behaviour === 'approve' ? 'approved' : declined ? 'declined' : 'challenge',
      // a decline is answered at once, with no callback (the answer is the outcome)
      status: declined ? 'failed' : 'pending',
      failureCode: declined ? 'card-declined' : null,
      failureMessage: declined ? 'The card was declined by the issuer' : null,
      challengeEndsAt: opts.clock.now() + opts.threeDsWindowMs,
      eventId: `sbxevt_${randomUUID()}`,
      requests: 1,
      callbacksDelivered: 0,
      refunded: 0,
      refundFault: sandboxRefundFault(card.number),
    };
    charges.set(externalId, c);
    byRef.set(c.providerRef, c);
    later(KEEP_MS, () => {
      charges.delete(externalId);
      byRef.delete(c.providerRef);
    });
    if (c.outcome === 'approved') conclude(c, 'succeeded', null, null, opts.callbackDelayMs);
    return [201, answer(c)];
  }

  /**
   * A refund of a succeeded charge, our refund id as its idempotency key: the same id again gets
   * the first answer and makes nothing more. Refused (final, 422): an unknown or unsucceeded
   * charge, another currency, more than is left of the charge.
   */
  async function refund(req: IncomingMessage): Promise<[number, unknown]> {
    const body = await readJson(req);
    const externalId = body.external_id;
    if (typeof externalId !== 'string' || !REFUND_ID.test(externalId))
      throw new SandboxError(400, 'invalid-request', 'external_id must be our refund id');
    if (req.headers['idempotency-key'] !== externalId)
      throw new SandboxError(400, 'invalid-request', 'Idempotency-Key must equal external_id');
    const existing = refunds.get(externalId);
    if (existing) {
      existing.requests++;
      if (!existing.reported) report(existing);
      return [200, { provider_ref: existing.providerRef, status: existing.status }];
    }
    const { payment_external_id: paymentId, amount, currency, callback_url: callbackUrl } = body;
    if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 1)
      throw new SandboxError(400, 'invalid-amount', 'amount must be a positive integer');
    if (typeof callbackUrl !== 'string' || !/^https?:\/\//.test(callbackUrl))
      throw new SandboxError(400, 'invalid-request', 'callback_url must be an http(s) URL');
    const c = typeof paymentId === 'string' ? charges.get(paymentId) : undefined;
    if (!c) throw new SandboxError(422, 'payment-unknown', 'no such charge');
    if (c.status !== 'succeeded') throw new SandboxError(422, 'payment-not-captured', 'the charge has not succeeded');
    if (currency !== c.currency) throw new SandboxError(422, 'invalid-currency', `the charge is in ${c.currency}`);
    if (amount > c.amount - c.refunded)
      throw new SandboxError(422, 'refund-exceeds-captured', `at most ${c.amount - c.refunded} is left to refund`);
    const r: SandboxRefund = {
      externalId,
      charge: c,
      providerRef: `SBX-CARD-RF-${randomUUID()}`,
      amount,
      callbackUrl,
      status: 'pending',
      reported: false,
      eventId: `sbxevt_${randomUUID()}`,
      requests: 1,
      callbacksDelivered: 0,
    };
    refunds.set(externalId, r);
    c.refunded += amount;
    later(KEEP_MS, () => refunds.delete(externalId));
    opts.log.info({ externalId, payment: c.externalId, amount }, 'refund');
    if (c.refundFault === '5xx-once') {
      // the refund is made, but its answer is lost: its outcome follows the request that asks again with the same id
      c.refundFault = 'none';
      throw new SandboxError(503, 'acquirer-unavailable', 'the acquirer failed after taking the refund (simulated)');
    }
    report(r);
    return [201, { provider_ref: r.providerRef, status: r.status }];
  }

  /** The refund succeeds after the callback delay, and its signed callback says so. */
  function report(r: SandboxRefund): void {
    r.reported = true;
    later(opts.callbackDelayMs, () => {
      r.status = 'succeeded';
      const callback: CallbackWire = {
        event_id: r.eventId,
        kind: 'refund',
        external_id: r.externalId,
        provider_ref: r.providerRef,
        status: 'succeeded',
        failure_code: null,
        failure_message: null,
        occurred_at: Math.floor(opts.clock.now() / 1000),
      };
      void callbacks.send(r.callbackUrl, callback, { onDelivered: () => r.callbacksDelivered++ });
    });
  }

  const refundView = (r: SandboxRefund) => ({
    kind: 'refund',
    external_id: r.externalId,
    provider_ref: r.providerRef,
    status: r.status,
    failure_code: null,
    failure_message: null,
    sandbox: { requests: r.requests, callbacks_delivered: r.callbacksDelivered },
  });

  function statusView(c: Charge) {
    return {
      kind: 'card_payment',
      external_id: c.externalId,
      provider_ref: c.providerRef,
      status: expired(c) ? 'expired' : c.status,
      failure_code: c.failureCode,
      failure_message: c.failureMessage,
      sandbox: { requests: c.requests, callbacks_delivered: c.callbacksDelivered, refunded: c.refunded },
    };
  }

  const acsHeaders = () => ({
    'Content-Security-Policy': `default-src 'none'; style-src 'self'; form-action 'self' ${opts.serviceOrigin}; base-uri 'none'; frame-ancestors ${opts.serviceOrigin}`,
    'Cache-Control': 'no-store',
  });

  function challengePage(res: ServerResponse, c: Charge): void {
    const open = c.status === 'pending' && !expired(c);
    const state = open
      ? ''
      : `<p class="done" role="status">${expired(c) ? 'This authentication has expired. / Cette authentification a expiré.' : 'This authentication is already answered. / Cette authentification a déjà reçu sa réponse.'}</p>`;
    const forms = open
      ? `<form method="post" action="/acs/${c.providerRef}/complete"><button type="submit" class="ok">Complete authentication</button></form>
<form method="post" action="/acs/${c.providerRef}/fail"><button type="submit" class="ko">Fail authentication</button></form>`
      : '';
    const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>3-D Secure (test page)</title><link rel="stylesheet" href="/acs.css"></head>
<body><p class="banner" role="note"><strong>TEST PAGE</strong>: sandbox issuer, no real bank and no real money. / Page de test : banque fictive, aucun argent réel.</p>
<main><h1>3-D Secure</h1>
<p>Amount / Montant: <strong class="amount">${escapeHtml(formatAmount(c.amount, c.currency))}</strong></p>
<p>Card / Carte: ${escapeHtml(c.card.brand)} •••• ${escapeHtml(c.card.last4)}</p>
${state}${forms}</main></body></html>`;
    sendText(res, open ? 200 : 409, 'text/html; charset=utf-8', html, acsHeaders());
  }

  async function answerChallenge(
    req: IncomingMessage,
    res: ServerResponse,
    c: Charge,
    action: 'complete' | 'fail',
  ): Promise<void> {
    await readBody(req, 1024);
    if (expired(c)) return challengePage(res, c);
    if (c.status === 'pending') {
      if (action === 'complete') conclude(c, 'succeeded', null, null, 0);
      else conclude(c, 'failed', 'authentication-failed', 'The client failed 3-D Secure authentication', 0);
      opts.log.info({ externalId: c.externalId, action }, '3-D Secure answered');
    }
    // back to the merchant's checkout, which asks its server for the outcome
    res.writeHead(303, { Location: c.returnUrl, 'Cache-Control': 'no-store', 'Content-Length': '0' });
    res.end();
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://acquirer');
    const parts = url.pathname.split('/').filter(Boolean);
    if (req.method === 'GET' && url.pathname === '/acs.css')
      return sendText(res, 200, 'text/css; charset=utf-8', acsStyle, { 'Cache-Control': 'public, max-age=300' });
    if (req.method === 'GET' && url.pathname === '/health') return sendJson(res, 200, { ok: true });
    if (parts[0] === 'acs') {
      const c = byRef.get(parts[1] ?? '');
      if (!c || c.outcome !== 'challenge')
        return sendText(
          res,
          404,
          'text/html; charset=utf-8',
          '<!doctype html><title>Not found</title><p>No such authentication.</p>',
          acsHeaders(),
        );
      if (req.method === 'GET' && parts.length === 2) return challengePage(res, c);
      if (req.method === 'POST' && parts.length === 3 && (parts[2] === 'complete' || parts[2] === 'fail'))
        return answerChallenge(req, res, c, parts[2]);
      throw new SandboxError(404, 'not-found', 'no such route');
    }
    if (parts[0] !== 'v1') throw new SandboxError(404, 'not-found', 'no such route');
    if (!safeEqual(req.headers.authorization ?? '', `Bearer ${opts.apiKey}`))
      throw new SandboxError(401, 'unauthorized', 'bad API key');
    if (req.method === 'POST' && url.pathname === '/v1/charges') return sendJson(res, ...(await charge(req)));
    if (req.method === 'POST' && url.pathname === '/v1/refunds') return sendJson(res, ...(await refund(req)));
    if (req.method === 'GET' && parts.length === 3 && parts[1] === 'transactions') {
      const id = decodeURIComponent(parts[2]);
      const r = refunds.get(id);
      if (r) return sendJson(res, 200, refundView(r));
      const c = charges.get(id);
      if (!c) throw new SandboxError(404, 'not-found', 'no such transaction');
      return sendJson(res, 200, statusView(c));
    }
    throw new SandboxError(404, 'not-found', 'no such route');
  }

  const server = sandboxServer('acquirer', opts.log, route);
  server.on('close', () => callbacks.close());
  return server;
}
