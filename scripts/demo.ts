/**
 * npm run demo: against a running service (npm start), creates a sandbox merchant through the
 * operator API, creates a mobile-money payment to the sandbox number 243990000001, prints each
 * status until the payment reaches its outcome (about 3 s), then the event it sent.
 *
 * Reads BASE_URL and ADMIN_API_TOKEN like the service (development defaults).
 */
import { randomUUID } from 'node:crypto';
import { getConfig } from '../shared/config';
import { createMerchantWithKey, follow, merchantSdk, operatorApi, requireService } from './lib/demo';
import { sleep } from './lib/processes';

async function main() {
  const config = getConfig();
  const baseUrl = config.baseUrl;
  await requireService(baseUrl);

  const merchant = await createMerchantWithKey(
    operatorApi(baseUrl, config.adminApiToken),
    { name: `Demo shop ${new Date().toISOString()}`, fees: { USD: { percent_bps: 250, fixed: 10 } } },
    { environment: 'test', scope: 'full' },
  );
  const cred = merchant.credential;
  console.log(`merchant ${merchant.id}, test credential ${cred.id}`);

  // the merchant SDK (shared/client): signs, sets the Idempotency-Key, retries, throws typed errors
  const api = merchantSdk(baseUrl, cred);
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

  payment = await follow(() => api.payments.retrieve(id), {
    everyMs: 200,
    timeoutMs: 60_000,
    timeoutMessage: (last) =>
      `payment still ${last?.status} after 60 s: are the provider-push, callback-reconciler and sandbox-provider processes running?`,
    first: payment,
    onRead: (p, shown) => {
      if (p.provider_ref && !shown?.provider_ref)
        console.log(`${elapsed()}  push sent to ${p.provider}, provider_ref ${p.provider_ref}`);
      if (p.status !== shown?.status)
        console.log(`${elapsed()}  status ${p.status}${p.failure_code ? ` (${p.failure_code})` : ''}`);
    },
  });
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
