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
import { createMerchantWithKey, follow, merchantSdk, operatorApi, requireService } from './lib/demo';

async function main() {
  const config = getConfig();
  const baseUrl = config.baseUrl;
  await requireService(baseUrl);
  const vault = await fetch(`${config.connectors['card-sandbox'].vaultUrl}/health`).catch(() => undefined);
  if (!vault || vault.status !== 200)
    throw new Error(
      `the card vault sandbox does not answer at ${config.connectors['card-sandbox'].vaultUrl}: is \`npm start\` running its card-vault line?`,
    );

  const merchant = await createMerchantWithKey(
    operatorApi(baseUrl, config.adminApiToken),
    { name: 'Demo Café Kinshasa', fees: { USD: { percent_bps: 250, fixed: 10 } } },
    { environment: 'test', scope: 'full' },
  );
  const api = merchantSdk(baseUrl, merchant.credential);
  const payment = await api.payments.create({
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
  console.log(`card payment ${payment.id}: ${payment.status}, ${payment.amount_charged / 100} ${payment.currency}\n`);
  console.log(`  open in a browser:  ${payment.checkout_url}`);
  console.log(`  (English:           ${payment.checkout_url}?lang=en)\n`);
  console.log('  pay with 4242 4242 4242 4242, any future expiry (MM/YY), any 3-digit CVC');
  console.log('  4000 0000 0000 3220 asks for 3-D Secure; 4000 0000 0000 0002 is declined\n');

  const started = Date.now();
  const done = await follow(() => api.payments.retrieve(payment.id), {
    everyMs: 1000,
    first: payment,
    onRead: (p, last) => {
      if (p.status !== last?.status)
        console.log(
          `${((Date.now() - started) / 1000).toFixed(0).padStart(5)} s  status ${p.status}${p.failure_code ? ` (${p.failure_code})` : ''}${p.card ? `, card ${p.card.brand} •••• ${p.card.last4}` : ''}`,
        );
    },
  });
  console.log(`\npayment:\n${JSON.stringify(done, null, 2)}`);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
