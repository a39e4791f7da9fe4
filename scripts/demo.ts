/**
 * npm run demo: against a running service (npm start), creates a sandbox merchant through the
 * operator API, creates a mobile-money payment to the sandbox number 243990000001, prints each
 * status until the payment reaches its outcome (about 3 s), then the event it sent.
 *
 * Reads BASE_URL and ADMIN_API_TOKEN like the service (development defaults).
 */
import { randomUUID } from 'node:crypto';
import { getConfig } from '../shared/config';
import { PaymentsApi } from '../shared/client/index';

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function admin(baseUrl: string, token: string, path: string, body: unknown) {
  const res = await fetch(baseUrl + path, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json: any = await res.json().catch(() => ({}));
  if (res.status !== 201) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

async function main() {
  const config = getConfig();
  const baseUrl = config.baseUrl;
  const ready = await fetch(`${baseUrl}/health/ready`).catch(() => undefined);
  if (!ready || ready.status !== 200)
    throw new Error(`the service does not answer at ${baseUrl}: start it with \`npm start\` first`);

  const merchant = await admin(baseUrl, config.adminApiToken, '/admin/merchants', {
    name: `Demo shop ${new Date().toISOString()}`,
    fees: { USD: { percent_bps: 250, fixed: 10 } },
  });
  const cred = await admin(baseUrl, config.adminApiToken, `/admin/merchants/${merchant.id}/credentials`, {
    environment: 'test',
    scope: 'full',
  });
  console.log(`merchant ${merchant.id}, test credential ${cred.id}`);

  // the merchant SDK (shared/client): signs, sets the Idempotency-Key, retries, throws typed errors
  const api = new PaymentsApi({ baseUrl, apiKey: cred.api_key, secret: cred.secret });
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s`;
  let payment = await api.payments.create({
    amount: 1500,
    currency: 'USD',
    method: 'mobile_money',
    operator: 'vodacom',
    phone: '243990000001',
    reference: `demo-${randomUUID()}`,
    description: 'Demo payment',
    metadata: { demo: true },
  });
  const id = payment.id;
  console.log(`${elapsed()}  POST /v1/payments → 201 ${id}`);
  console.log(
    `${elapsed()}  status ${payment.status} (amount_charged ${payment.amount_charged}, fee ${payment.fee}, amount_net ${payment.amount_net} ${payment.currency})`,
  );

  let shown = { status: payment.status, ref: payment.provider_ref };
  while (!FINAL.has(payment.status)) {
    if (Date.now() - started > 60_000)
      throw new Error(
        `payment still ${payment.status} after 60 s: are the provider-push, callback-reconciler and sandbox-provider processes running?`,
      );
    await sleep(200);
    payment = await api.payments.retrieve(id);
    if (payment.provider_ref && !shown.ref)
      console.log(`${elapsed()}  push sent to ${payment.provider}, provider_ref ${payment.provider_ref}`);
    if (payment.status !== shown.status)
      console.log(`${elapsed()}  status ${payment.status}${payment.failure_code ? ` (${payment.failure_code})` : ''}`);
    shown = { status: payment.status, ref: payment.provider_ref };
  }
  console.log(`\npayment:\n${JSON.stringify(payment, null, 2)}`);

  // the event is written with the status change; the events API lists the newest first
  for (let i = 0; i < 25; i++) {
    const page = await api.events.list({ type: `payment.${payment.status}` as 'payment.succeeded', limit: 10 }).page();
    const event = page.data.find((e) => (e.data.object as { id?: string }).id === id);
    if (event) {
      console.log(`\nevent:\n${JSON.stringify(event, null, 2)}`);
      return;
    }
    await sleep(200);
  }
  console.log('\n(no event found for this payment)');
}

main().catch((err) => {
  console.error(`demo failed: ${err instanceof Error ? err.message : err}`);
  process.exit(1);
});
