import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import path from 'node:path';
import type { Clock } from '../../clock';
import { safeEqual } from '../../crypto/secrets';
import type { Logger } from '../../logger';
import { escapeHtml, maskToken } from '../../checkout/html';
import { brandOf, luhnValid, parseExpiry } from './cards';
import { SandboxError, readJson, sandboxServer, sendJson, sendText } from '../../providers/sandbox/http';

/**
 * The sandbox card vault, on its own origin: the card-field iframe the checkout frames
 * (`GET /fields`), the token API it calls (`POST /v1/tokens`: card → single-use `tok_…`), and
 * the acquirer's redemption (`POST /v1/tokens/{token}/redeem`, with the vault's API key, once,
 * for the payment it was issued for). Card numbers and CVCs live in its memory only, never in a
 * log line; tokens are logged by their first characters.
 */

export interface VaultOptions {
  /** the checkout's origin: the only page allowed to frame the fields and to talk to them */
  serviceOrigin: string;
  /** the key the acquirer redeems tokens with */
  apiKey: string;
  tokenTtlMs: number;
  /** what decides when a token has expired (a test moves it: shared/clock.ts) */
  clock: Clock;
  log: Logger;
}

interface StoredCard {
  number: string;
  expMonth: number;
  expYear: number;
  brand: string;
  last4: string;
  /** the payment the checkout asked the token for: another payment cannot use it */
  payment: string;
  expiresAt: number;
  used: boolean;
}

const ASSETS = path.join(__dirname, 'assets');
const asset = (name: string) => readFileSync(path.join(ASSETS, name), 'utf8');
const PAYMENT_ID = /^pay_[0-9a-f-]{36}$/;

const TEXT = {
  fr: {
    title: 'Carte bancaire',
    number: 'Numéro de carte',
    exp: 'Expiration (MM/AA)',
    csc: 'Cryptogramme (CVC)',
    'card-invalid': 'Numéro de carte invalide.',
    'expiry-invalid': "Date d'expiration invalide ou passée (MM/AA).",
    'cvc-invalid': 'Le cryptogramme doit avoir 3 chiffres.',
    network: 'Le service de carte ne répond pas. Réessayez.',
  },
  en: {
    title: 'Card',
    number: 'Card number',
    exp: 'Expiry (MM/YY)',
    csc: 'Security code (CVC)',
    'card-invalid': 'Invalid card number.',
    'expiry-invalid': 'Invalid or past expiry date (MM/YY).',
    'cvc-invalid': 'The security code must have 3 digits.',
    network: 'The card service does not answer. Please try again.',
  },
} as const;

export function createVaultServer(opts: VaultOptions): Server {
  const tokens = new Map<string, StoredCard>();
  const script = asset('fields.js');
  const style = asset('fields.css');
  const csp = `default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors ${opts.serviceOrigin}`;

  const sweep = setInterval(() => {
    const now = opts.clock.now();
    for (const [tok, card] of tokens) if (card.expiresAt < now - 60_000) tokens.delete(tok);
  }, 60_000);
  sweep.unref();

  function fieldsPage(url: URL, res: ServerResponse): void {
    const lang = url.searchParams.get('lang') === 'en' ? 'en' : 'fr';
    const payment = url.searchParams.get('payment') ?? '';
    if (!PAYMENT_ID.test(payment)) throw new SandboxError(404, 'not-found', 'no such payment');
    const t = TEXT[lang];
    const messages = JSON.stringify({
      'card-invalid': t['card-invalid'],
      'expiry-invalid': t['expiry-invalid'],
      'cvc-invalid': t['cvc-invalid'],
      network: t.network,
    });
    const html = `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${t.title}</title><link rel="stylesheet" href="/fields.css"></head>
<body data-parent-origin="${escapeHtml(opts.serviceOrigin)}" data-payment="${payment}" data-messages="${escapeHtml(messages)}">
<form id="card" novalidate autocomplete="on">
<label for="cc-number">${t.number}</label>
<input id="cc-number" name="cc-number" autocomplete="cc-number" inputmode="numeric" maxlength="23" required aria-describedby="card-error">
<div class="row"><div><label for="cc-exp">${t.exp}</label>
<input id="cc-exp" name="cc-exp" autocomplete="cc-exp" inputmode="numeric" maxlength="7" placeholder="MM/${lang === 'fr' ? 'AA' : 'YY'}" required aria-describedby="card-error"></div>
<div><label for="cc-csc">${t.csc}</label>
<input id="cc-csc" name="cc-csc" autocomplete="cc-csc" inputmode="numeric" maxlength="4" required aria-describedby="card-error"></div></div>
<p id="card-error" class="error" role="alert" aria-live="assertive"></p>
</form><script src="/fields.js"></script></body></html>`;
    sendText(res, 200, 'text/html; charset=utf-8', html, {
      'Content-Security-Policy': csp,
      'Cache-Control': 'no-store',
    });
  }

  async function createToken(req: IncomingMessage): Promise<[number, unknown]> {
    // the token API serves the vault's own iframe only
    const { origin, host } = req.headers;
    if (origin !== undefined && origin !== `http://${host}` && origin !== `https://${host}`)
      throw new SandboxError(403, 'origin-not-allowed', 'tokens are created by the vault’s own card fields');
    const body = await readJson(req, 4096);
    const number = typeof body.number === 'string' ? body.number.replace(/[\s-]/g, '') : '';
    if (!luhnValid(number)) throw new SandboxError(400, 'card-invalid', 'the card number is not valid');
    const exp = typeof body.exp === 'string' ? parseExpiry(body.exp) : null;
    if (!exp) throw new SandboxError(400, 'expiry-invalid', 'the expiry must be MM/YY in the future');
    if (typeof body.cvc !== 'string' || !/^[0-9]{3,4}$/.test(body.cvc))
      throw new SandboxError(400, 'cvc-invalid', 'the CVC must be 3 digits');
    if (typeof body.payment !== 'string' || !PAYMENT_ID.test(body.payment))
      throw new SandboxError(400, 'invalid-request', 'payment must be the payment id');
    const token = `tok_${randomBytes(18).toString('base64url')}`;
    const card: StoredCard = {
      number,
      expMonth: exp.month,
      expYear: exp.year,
      brand: brandOf(number),
      last4: number.slice(-4),
      payment: body.payment,
      expiresAt: opts.clock.now() + opts.tokenTtlMs,
      used: false,
    };
    tokens.set(token, card);
    opts.log.info({ token: maskToken(token), brand: card.brand }, 'token created');
    return [201, { token, brand: card.brand, last4: card.last4, exp_month: card.expMonth, exp_year: card.expYear }];
  }

  async function redeem(req: IncomingMessage, token: string): Promise<[number, unknown]> {
    if (!safeEqual(req.headers.authorization ?? '', `Bearer ${opts.apiKey}`))
      throw new SandboxError(401, 'unauthorized', 'bad API key');
    const body = await readJson(req, 1024);
    const card = tokens.get(token);
    if (!card) throw new SandboxError(404, 'token-invalid', 'no such token');
    if (card.payment !== body.payment)
      throw new SandboxError(403, 'token-foreign', 'the token was issued for another payment');
    if (card.used) throw new SandboxError(409, 'token-used', 'the token was already used');
    if (opts.clock.now() > card.expiresAt) throw new SandboxError(410, 'token-expired', 'the token has expired');
    card.used = true;
    opts.log.info({ token: maskToken(token) }, 'token redeemed');
    return [
      200,
      { number: card.number, brand: card.brand, last4: card.last4, exp_month: card.expMonth, exp_year: card.expYear },
    ];
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://vault');
    const p = url.pathname;
    if (req.method === 'GET' && p === '/fields') return fieldsPage(url, res);
    if (req.method === 'GET' && p === '/fields.js')
      return sendText(res, 200, 'text/javascript; charset=utf-8', script, { 'Cache-Control': 'public, max-age=300' });
    if (req.method === 'GET' && p === '/fields.css')
      return sendText(res, 200, 'text/css; charset=utf-8', style, { 'Cache-Control': 'public, max-age=300' });
    if (req.method === 'GET' && p === '/health') return sendJson(res, 200, { ok: true });
    if (req.method === 'POST' && p === '/v1/tokens') return sendJson(res, ...(await createToken(req)));
    const m = /^\/v1\/tokens\/(tok_[A-Za-z0-9_-]{1,64})\/redeem$/.exec(p);
    if (req.method === 'POST' && m) return sendJson(res, ...(await redeem(req, m[1])));
    if (req.method === 'POST' && /^\/v1\/tokens\/[^/]+\/redeem$/.test(p))
      throw new SandboxError(404, 'token-invalid', 'no such token');
    throw new SandboxError(404, 'not-found', 'no such route');
  }

  const server = sandboxServer('vault', opts.log, route);
  server.on('close', () => clearInterval(sweep));
  return server;
}
