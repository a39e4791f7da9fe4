/**
 * `npm run link:create -- --amount 2500 --currency USD --description "Robe wax"`: against a
 * running service (npm start), creates a sandbox (test) merchant through the operator API, then a
 * payment link for it through the merchant SDK, and prints the link's page URL to send a client.
 * Without --amount the client types the amount (--min-amount, --max-amount bound it).
 *
 * Options: --methods mobile_money,card (default both), --single-use, --expires-in <seconds>,
 * --return-url <url>, --merchant-name <name>. Reads BASE_URL and ADMIN_API_TOKEN like the service
 * (development defaults).
 */
import { parseArgs } from 'node:util';
import { getConfig } from '../shared/config';
import type { CreatePaymentLinkParams } from '../shared/client/sdk';
import { createMerchantWithKey, merchantSdk, operatorApi, requireService } from './lib/demo';

const minor = (name: string, v: string | undefined) => {
  if (v === undefined) return undefined;
  if (!/^[0-9]{1,13}$/.test(v)) throw new Error(`--${name} must be an amount in minor units (2500 is 25.00)`);
  return Number(v);
};

async function main() {
  const { values } = parseArgs({
    options: {
      amount: { type: 'string' },
      currency: { type: 'string', default: 'USD' },
      description: { type: 'string' },
      'min-amount': { type: 'string' },
      'max-amount': { type: 'string' },
      methods: { type: 'string' },
      'single-use': { type: 'boolean', default: false },
      'expires-in': { type: 'string' },
      'return-url': { type: 'string' },
      'merchant-name': { type: 'string', default: 'Boutique de test' },
    },
  });
  if (!values.description) throw new Error('--description is required (shown to the client)');
  if (!['USD', 'CDF'].includes(values.currency)) throw new Error('--currency must be USD or CDF');
  const config = getConfig();
  const baseUrl = config.baseUrl;
  await requireService(baseUrl, '/health/live');

  const merchant = await createMerchantWithKey(
    operatorApi(baseUrl, config.adminApiToken),
    { name: values['merchant-name'] },
    { environment: 'test', scope: 'payments' },
  );
  const api = merchantSdk(baseUrl, merchant.credential);
  const params: CreatePaymentLinkParams = {
    currency: values.currency as 'USD' | 'CDF',
    description: values.description,
    ...(values.amount !== undefined ? { amount: minor('amount', values.amount) } : {}),
    ...(values['min-amount'] !== undefined ? { min_amount: minor('min-amount', values['min-amount']) } : {}),
    ...(values['max-amount'] !== undefined ? { max_amount: minor('max-amount', values['max-amount']) } : {}),
    ...(values.methods
      ? { methods: values.methods.split(',').map((m) => m.trim()) as ('mobile_money' | 'card')[] }
      : {}),
    ...(values['single-use'] ? { single_use: true } : {}),
    ...(values['expires-in'] ? { expires_at: Math.floor(Date.now() / 1000) + Number(values['expires-in']) } : {}),
    ...(values['return-url'] ? { return_url: values['return-url'] } : {}),
  };
  const link = await api.paymentLinks.create(params);
  process.stdout.write(`merchant ${merchant.id} (test), payment link ${link.id}\n`);
  process.stdout.write(
    `sandbox numbers: 243990000001 succeeds, 243990000002 is declined; card 4000000000003220 asks for 3-D Secure\n`,
  );
  process.stdout.write(`${link.url}\n`);
}

main().catch((err) => {
  process.stderr.write(`link:create failed: ${err.message}\n`);
  process.exit(1);
});
