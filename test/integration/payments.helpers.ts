import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { TestEnv } from '../helpers/env';
import type { RunningProcess } from '../helpers/processes';
import { eventually } from '../helpers/processes';
import type { ServiceClient } from '../../shared/client/signing';
import { signCallback } from '../../shared/providers/signature';

/** Helpers shared by the payment flow tests (workers, sandbox provider, callbacks). */

export const SANDBOX_API_KEY = 'sandbox-provider-key';
export const SANDBOX_SECRET = 'sandbox-callback-secret';

export async function startSandbox(env: TestEnv, extra: Record<string, string> = {}): Promise<{ process: RunningProcess; url: string }> {
  const p = await env.spawn('shared/providers/sandbox/server.ts', { SANDBOX_PROVIDER_PORT: '0', ...extra });
  const line = await p.waitForLine((l) => l?.msg === 'sandbox provider listening');
  return { process: p, url: line.url };
}

/** What the sandbox provider knows of one of our objects (its status endpoint, with its test counters). */
export async function sandboxTransaction(sandboxUrl: string, operator: string, id: string): Promise<any | undefined> {
  const res = await fetch(`${sandboxUrl}/${operator}/v1/transactions/${id}`, { headers: { Authorization: `Bearer ${SANDBOX_API_KEY}` } });
  return res.status === 200 ? res.json() : undefined;
}

export function mobilePayment(phone: string, over: Record<string, unknown> = {}) {
  return { amount: 10_000, currency: 'USD', method: 'mobile_money', operator: 'vodacom', phone, reference: `ref-${randomUUID()}`, ...over };
}

export async function createPayment(client: ServiceClient, phone: string, over: Record<string, unknown> = {}) {
  const res = await client.post('/v1/payments', mobilePayment(phone, over));
  expect(res.status, JSON.stringify(res.body)).to.equal(201);
  return res.body;
}

export async function waitForStatus(client: ServiceClient, id: string, status: string, timeoutMs = 20_000) {
  return eventually(async () => {
    const res = await client.get(`/v1/payments/${id}`);
    return res.body.status === status ? res.body : undefined;
  }, timeoutMs, 100);
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
  const signature = o.signature === undefined ? signCallback(o.secret ?? SANDBOX_SECRET, raw, o.timestamp ?? Math.floor(Date.now() / 1000)) : o.signature;
  if (signature !== null) headers['X-Provider-Signature'] = signature;
  const res = await fetch(`${baseUrl}/callbacks/${provider}`, { method: 'POST', headers, body: raw });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body };
}

/** Waits until every stored callback has been applied by the reconciler; returns their rows, oldest first. */
export async function processedCallbacks(env: TestEnv, objectId: string, count: number) {
  return eventually(async () => {
    const rows = await env.services.db('provider_callbacks').where({ object_id: objectId }).orderBy('received_at');
    return rows.length === count && rows.every((r) => r.processed_at) ? rows : undefined;
  }, 15_000, 100);
}

export async function paymentCredits(env: TestEnv, paymentId: string) {
  return env.services.db('ledger_transactions').where({ kind: 'payment_credit', reference_id: paymentId });
}
