import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { ServiceClient } from '../../shared/client/signing';
import { startTestEnv, type TestEnv } from './env';
import { parsedBody } from './http';
import { freePort } from '../../scripts/lib/ports';
import { eventually, type RunningProcess } from '../../scripts/lib/processes';

/** The three origins of a card test (docs/decisions.md#cards-hosted-checkout): the service, the sandbox vault, the sandbox acquirer, and the pools behind them. */
export interface CardTestEnv {
  env: TestEnv;
  vaultUrl: string;
  providerUrl: string;
  processes: RunningProcess[];
}

export const VAULT_KEY = 'card-vault-key-change-me';
export const CARD_SECRET = 'card-sandbox-callback-secret';

/** The service on this file's database, with the card vault, the acquirer, card-charge and callback-reconciler as real processes. */
export async function startCardEnv(overrides: Record<string, string> = {}): Promise<CardTestEnv> {
  const vaultPort = await freePort();
  const providerPort = await freePort();
  const vaultUrl = `http://127.0.0.1:${vaultPort}`;
  const providerUrl = `http://127.0.0.1:${providerPort}`;
  const env = await startTestEnv({
    CARD_VAULT_PORT: String(vaultPort),
    CARD_VAULT_URL: vaultUrl,
    CARD_PROVIDER_PORT: String(providerPort),
    CARD_PROVIDER_URL: providerUrl,
    CARD_SANDBOX_CALLBACK_DELAY_MS: '50',
    ASK_INTERVAL_MS: '200',
    ...overrides,
  });
  const processes = await Promise.all([
    env.spawn('shared/cards/sandbox/vaultServer.ts'),
    env.spawn('shared/cards/sandbox/acquirerServer.ts'),
    env.spawn('workers/card-charge/index.ts'),
    env.spawn('workers/callback-reconciler/index.ts'),
  ]);
  return { env, vaultUrl, providerUrl, processes };
}

export function cardPaymentBody(over: Record<string, unknown> = {}) {
  return {
    amount: 2_500,
    currency: 'USD',
    method: 'card',
    reference: `order-${randomUUID()}`,
    description: 'Two bags of coffee',
    customer_email: 'client@shop.example',
    customer_name: 'Amani Client',
    return_url: 'https://shop.example/return?cart=42',
    ...over,
  };
}

export async function createCardPayment(client: ServiceClient, over: Record<string, unknown> = {}) {
  const res = await client.post('/v1/payments', cardPaymentBody(over));
  expect(res.status, JSON.stringify(res.body)).to.equal(201);
  return res.body;
}

/** What the vault's card fields do: the card to the token API, for one payment. */
export async function tokenFor(
  vaultUrl: string,
  payment: string,
  number = '4242424242424242',
  exp = '12/34',
  cvc = '123',
) {
  const res = await fetch(`${vaultUrl}/v1/tokens`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ number, exp, cvc, payment }),
  });
  const body = (await res.json()) as any;
  return { status: res.status, body, token: body.token as string };
}

/** POST /checkout/{id}/pay as the checkout page does (from `ip`, through a trusted proxy when the file trusts one). */
export async function pay(baseUrl: string, id: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${baseUrl}/checkout/${id}/pay`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Origin: new URL(baseUrl).origin, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: parsedBody(await res.text()) };
}

export async function paymentRow(env: TestEnv, id: string) {
  return env.services.db('payments').where({ id }).first();
}

export async function waitForRow(env: TestEnv, id: string, pred: (row: any) => boolean, timeoutMs = 15_000) {
  return eventually(
    async () => {
      const row = await paymentRow(env, id);
      return pred(row) ? row : undefined;
    },
    timeoutMs,
    50,
  );
}
