import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from './env';
import { parsedBody } from './http';
import { freePort } from '../../scripts/lib/ports';
import { eventually, type RunningProcess } from '../../scripts/lib/processes';
import type { ServiceClient } from '../../shared/client/signing';
import { buildPayment } from '../../shared/payments/create';
import { signCallback } from '../../shared/providers/signature';

/**
 * Named scenarios of the money flows (payments, callbacks, refunds, payouts, balance): a service
 * with the sandbox provider and every pool a payment, refund or payout goes through; payments
 * that really succeeded through HTTP, the provider-push pool, the sandbox's signed callback and
 * the callback pool; callbacks sent as a provider sends them.
 */

export const SANDBOX_API_KEY = 'sandbox-provider-key';
export const SANDBOX_SECRET = 'sandbox-callback-secret';

/** Delay of the sandbox's callbacks in these tests (the 3 s of docs/decisions.md#sandbox-test-keys would only slow them down). */
const CALLBACK_DELAY_MS = '150';

export const POOLS = [
  'workers/provider-push/index.ts',
  'workers/callback-reconciler/index.ts',
  'workers/refund/index.ts',
  'workers/payout/index.ts',
];

/** Starts the sandbox provider (on a free port unless `extra` names one); returns its process and URL. */
export async function startSandbox(
  env: TestEnv,
  extra: Record<string, string> = {},
): Promise<{ process: RunningProcess; url: string }> {
  const p = await env.spawn('shared/providers/sandbox/server.ts', { SANDBOX_PROVIDER_PORT: '0', ...extra });
  const line = await p.waitForLine((l) => l?.msg === 'sandbox provider listening');
  return { process: p, url: line.url };
}

/** The service with the sandbox provider and `pools` (all of them by default) running. */
export async function startMoneyEnv(overrides: Record<string, string> = {}, pools = POOLS): Promise<TestEnv> {
  const sandboxPort = await freePort();
  const env = await startTestEnv({
    SANDBOX_PROVIDER_PORT: String(sandboxPort),
    SANDBOX_PROVIDER_URL: `http://127.0.0.1:${sandboxPort}`,
    SANDBOX_CALLBACK_DELAY_MS: CALLBACK_DELAY_MS,
    // these files send far more than 100 requests a minute per key; rate limiting has its own tests
    RATE_LIMIT_PER_MINUTE: '100000',
    ...overrides,
  });
  await startSandbox(env, { SANDBOX_PROVIDER_PORT: String(sandboxPort) });
  for (const pool of pools) await env.spawn(pool);
  return env;
}

/** A merchant with a `full` test key and no fees unless given. */
export function aMerchant(
  env: TestEnv,
  merchant: Record<string, unknown> = {},
  scope: 'read' | 'payments' | 'full' = 'full',
): Promise<MerchantFixture> {
  return env.merchant({
    scope,
    merchant: { fees: { USD: { percent_bps: 0, fixed: 0 }, CDF: { percent_bps: 0, fixed: 0 } }, ...merchant },
  });
}

/** Polls GET `path` until `done(body)` holds; returns that body. */
export function waitFor(
  client: ServiceClient,
  path: string,
  done: (body: any) => boolean,
  timeoutMs = 15_000,
): Promise<any> {
  return eventually(
    async () => {
      const res = await client.get(path);
      return res.status === 200 && done(res.body) ? res.body : undefined;
    },
    timeoutMs,
    100,
  );
}

/** Polls a payment until it has `status`; returns it. */
export function waitForStatus(client: ServiceClient, id: string, status: string, timeoutMs = 20_000): Promise<any> {
  return waitFor(client, `/v1/payments/${id}`, (b) => b.status === status, timeoutMs);
}

/** The body of a mobile-money payment to `phone` (243990000001 succeeds: README's sandbox numbers). */
export function mobilePayment(phone: string, over: Record<string, unknown> = {}) {
  return {
    amount: 10_000,
    currency: 'USD',
    method: 'mobile_money',
    operator: 'vodacom',
    phone,
    reference: `ref-${randomUUID()}`,
    ...over,
  };
}

/** A mobile-money payment created through the API and left `processing` (not awaited). */
export async function aPayment(client: ServiceClient, over: Record<string, unknown> = {}): Promise<any> {
  const res = await client.post('/v1/payments', mobilePayment('243990000001', over));
  expect(res.status, JSON.stringify(res.body)).to.equal(201);
  return res.body;
}

/** A mobile-money payment that the sandbox provider confirmed: the merchant's available holds its net. */
export async function aSucceededPayment(client: ServiceClient, over: Record<string, unknown> = {}): Promise<any> {
  const p = await aPayment(client, over);
  return waitForStatus(client, p.id, 'succeeded', 15_000);
}

/** The balance object's amounts by currency: {available: {USD, CDF}, pending: {USD, CDF}}. */
export async function balanceOf(client: ServiceClient) {
  const res = await client.get('/v1/balance');
  expect(res.status).to.equal(200);
  const byCurrency = (list: { currency: string; amount: number }[]) =>
    Object.fromEntries(list.map((l) => [l.currency, l.amount]));
  return { available: byCurrency(res.body.available), pending: byCurrency(res.body.pending) };
}

/**
 * A succeeded card payment of `merchantId` (test environment), written straight to the table as
 * the hosted checkout would leave it (the whole card flow is test/integration/cards.test.ts).
 */
export async function aSucceededCardPayment(env: TestEnv, merchantId: string): Promise<string> {
  const row = buildPayment(
    {
      amount: 2_000,
      currency: 'USD',
      method: 'mobile_money',
      operator: 'vodacom',
      phone: '243990000001',
      reference: `card-${randomUUID()}`,
    },
    {
      fee_bearer: 'merchant',
      fees: { USD: { percent_bps: 0, fixed: 0 }, CDF: { percent_bps: 0, fixed: 0 } },
      per_tx_limit_usd: null,
      per_tx_limit_cdf: null,
    },
    { merchantId, environment: 'test' },
    env.config,
    env.services.providers,
    env.clock.now(),
  );
  await env.services.db('payments').insert({
    ...row,
    method: 'card',
    operator: null,
    phone: null,
    provider: null,
    customer_email: 'client@example.com',
    customer_name: 'Client',
    return_url: 'https://shop.example/return',
    status: 'succeeded',
    completed: row.created,
    metadata: JSON.stringify(row.metadata),
  });
  return row.id;
}

/** What the sandbox provider knows of one of our objects (what it answers when asked, GET /v1/transactions/{id}, with its test counters). */
export async function sandboxTransaction(sandboxUrl: string, operator: string, id: string): Promise<any> {
  const res = await fetch(`${sandboxUrl}/${operator}/v1/transactions/${id}`, {
    headers: { Authorization: `Bearer ${SANDBOX_API_KEY}` },
  });
  return res.status === 200 ? res.json() : undefined;
}

export interface CallbackFields {
  kind?: string;
  external_id: string;
  status: string;
  provider_ref?: string | null;
  failure_code?: string | null;
  failure_message?: string | null;
  event_id?: string;
}

export function callbackBody(f: CallbackFields): string {
  return JSON.stringify({
    event_id: f.event_id ?? `test_${randomUUID()}`,
    kind: f.kind ?? 'payment',
    external_id: f.external_id,
    provider_ref: f.provider_ref ?? null,
    status: f.status,
    failure_code: f.failure_code ?? null,
    failure_message: f.failure_message ?? null,
    occurred_at: Math.floor(Date.now() / 1000),
  });
}

/** Sends a callback as a provider would: signed with `secret` at `timestamp` (now by default). */
export async function sendCallback(
  baseUrl: string,
  provider: string,
  raw: string | Buffer,
  o: { secret?: string; timestamp?: number; signature?: string | null; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', ...o.headers };
  const signature =
    o.signature === undefined
      ? signCallback(o.secret ?? SANDBOX_SECRET, raw, o.timestamp ?? Math.floor(Date.now() / 1000))
      : o.signature;
  if (signature !== null) headers['X-Provider-Signature'] = signature;
  const res = await fetch(`${baseUrl}/callbacks/${provider}`, { method: 'POST', headers, body: raw });
  return { status: res.status, body: parsedBody(await res.text()) };
}

/** Waits until every stored callback has been applied by the callback-reconciler; returns their rows, oldest first. */
export async function processedCallbacks(env: TestEnv, objectId: string, count: number) {
  return eventually(
    async () => {
      const rows = await env.services.db('provider_callbacks').where({ object_id: objectId }).orderBy('received_at');
      return rows.length === count && rows.every((r) => r.processed_at) ? rows : undefined;
    },
    15_000,
    100,
  );
}

export async function paymentCredits(env: TestEnv, paymentId: string) {
  return env.services.db('ledger_transactions').where({ kind: 'payment_credit', reference_id: paymentId });
}
