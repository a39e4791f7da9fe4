import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from './env';
import { freePort } from './ports';
import { eventually } from './processes';
import type { ServiceClient } from '../../shared/client/signing';
import { buildPayment } from '../../shared/payments/create';

/**
 * Named scenarios for the money flows (refunds, payouts, balance): a service with the sandbox
 * provider and every pool a payment, refund or payout goes through, and payments that really
 * succeeded through HTTP, the provider-push pool, the sandbox's signed callback and the
 * reconciler.
 */

/** Delay of the sandbox's callbacks in these tests (decisions.md's 3 s would only slow them down). */
const CALLBACK_DELAY_MS = '150';

export const POOLS = [
  'workers/provider-push/index.ts',
  'workers/callback-reconciler/index.ts',
  'workers/refund/index.ts',
  'workers/payout/index.ts',
];

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
  await env.spawn('shared/providers/sandbox/server.ts');
  for (const pool of pools) await env.spawn(pool);
  return env;
}

/** A merchant with a `full` test key and no fees unless given. */
export function aMerchant(env: TestEnv, merchant: Record<string, unknown> = {}, scope: 'read' | 'payments' | 'full' = 'full'): Promise<MerchantFixture> {
  return env.merchant({ scope, merchant: { fees: { USD: { percent_bps: 0, fixed: 0 }, CDF: { percent_bps: 0, fixed: 0 } }, ...merchant } });
}

/** Polls GET `path` until `done(body)` holds; returns that body. */
export function waitFor(client: ServiceClient, path: string, done: (body: any) => boolean, timeoutMs = 15_000): Promise<any> {
  return eventually(async () => {
    const res = await client.get(path);
    return res.status === 200 && done(res.body) ? res.body : undefined;
  }, timeoutMs);
}

/** A mobile-money payment created through the API and left `processing` (not awaited). */
export async function aPayment(client: ServiceClient, over: Record<string, unknown> = {}): Promise<any> {
  const res = await client.post('/v1/payments', {
    amount: 10_000,
    currency: 'USD',
    method: 'mobile_money',
    operator: 'vodacom',
    phone: '243990000001',
    reference: `order-${randomUUID()}`,
    ...over,
  });
  expect(res.status, JSON.stringify(res.body)).to.equal(201);
  return res.body;
}

/** A mobile-money payment that the sandbox provider confirmed: the merchant's available holds its net. */
export async function aSucceededPayment(client: ServiceClient, over: Record<string, unknown> = {}): Promise<any> {
  const p = await aPayment(client, over);
  return waitFor(client, `/v1/payments/${p.id}`, (b) => b.status === 'succeeded');
}

/** The balance object's amounts by currency: {available: {USD, CDF}, pending: {USD, CDF}}. */
export async function balanceOf(client: ServiceClient) {
  const res = await client.get('/v1/balance');
  expect(res.status).to.equal(200);
  const byCurrency = (list: { currency: string; amount: number }[]) => Object.fromEntries(list.map((l) => [l.currency, l.amount]));
  return { available: byCurrency(res.body.available), pending: byCurrency(res.body.pending) };
}

/**
 * A succeeded card payment of `merchantId` (test environment), written straight to the table as
 * the hosted checkout would leave it (the whole card flow is test/integration/cards.test.ts).
 */
export async function aSucceededCardPayment(env: TestEnv, merchantId: string): Promise<string> {
  const row = buildPayment(
    { amount: 2_000, currency: 'USD', method: 'mobile_money', operator: 'vodacom', phone: '243990000001', reference: `card-${randomUUID()}` },
    { fee_bearer: 'merchant', fees: { USD: { percent_bps: 0, fixed: 0 }, CDF: { percent_bps: 0, fixed: 0 } }, per_tx_limit_usd: null, per_tx_limit_cdf: null },
    { merchantId, environment: 'test' },
    env.config,
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
