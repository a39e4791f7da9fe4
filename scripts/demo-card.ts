/**
 * npm run demo:card: against a running service (npm start, which also starts the card vault and
 * acquirer sandboxes), creates a sandbox merchant through the operator API and a card payment,
 * prints its checkout URL to open in a browser (pay with 4242 4242 4242 4242, any future expiry,
 * any 3-digit CVC; 4000 0000 0000 3220 for 3-D Secure, 4000 0000 0000 0002 to be declined), then
 * prints each status until the payment reaches its outcome.
 *
 * Reads BASE_URL and ADMIN_API_TOKEN like the service (development defaults).
 */
import { randomUUID } from 'node:crypto';
import { getConfig } from '../shared/config';
import { ServiceClient } from '../shared/client/signing';

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
  const vault = await fetch(`${config.cards.sandbox.vaultUrl}/health`).catch(() => undefined);
  if (!vault || vault.status !== 200)
    throw new Error(
      `the card vault sandbox does not answer at ${config.cards.sandbox.vaultUrl}: is \`npm start\` running its card-vault line?`,
    );

  const merchant = await admin(baseUrl, config.adminApiToken, '/admin/merchants', {
    name: 'Demo Café Kinshasa',
    fees: { USD: { percent_bps: 250, fixed: 10 } },
  });
  const cred = await admin(baseUrl, config.adminApiToken, `/admin/merchants/${merchant.id}/credentials`, {
    environment: 'test',
    scope: 'full',
  });
  const client = new ServiceClient({ baseUrl, apiKey: cred.api_key, secret: cred.secret });
  const created = await client.post('/v1/payments', {
    amount: 2_500,
    currency: 'USD',
    method: 'card',
    reference: `demo-card-${randomUUID()}`,
    description: 'Two bags of coffee',
    customer_email: 'client@example.com',
    customer_name: 'Demo Client',
    // where the client lands after paying: the service's own health page stands in for a shop
    return_url: `${baseUrl}/health/live`,
  });
  if (created.status !== 201) throw new Error(`POST /v1/payments answered ${created.status}: ${created.text}`);
  const payment = created.body;
  console.log(`card payment ${payment.id}: ${payment.status}, ${payment.amount_charged / 100} ${payment.currency}\n`);
  console.log(`  open in a browser:  ${payment.checkout_url}`);
  console.log(`  (English:           ${payment.checkout_url}?lang=en)\n`);
  console.log('  pay with 4242 4242 4242 4242, any future expiry (MM/YY), any 3-digit CVC');
  console.log('  4000 0000 0000 3220 asks for 3-D Secure; 4000 0000 0000 0002 is declined\n');

  let last = payment.status;
  const started = Date.now();
  for (;;) {
    await sleep(1000);
    const p = (await client.get(`/v1/payments/${payment.id}`)).body;
    if (p.status !== last) {
      console.log(
        `${((Date.now() - started) / 1000).toFixed(0).padStart(5)} s  status ${p.status}${p.failure_code ? ` (${p.failure_code})` : ''}${p.card ? `, card ${p.card.brand} •••• ${p.card.last4}` : ''}`,
      );
      last = p.status;
    }
    if (FINAL.has(p.status)) {
      console.log(`\npayment:\n${JSON.stringify(p, null, 2)}`);
      return;
    }
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
