import { parseArgs } from 'node:util';
import { getConfig } from '../shared/config';
import { createDb } from '../shared/db/knex';
import { createMerchant, issueCredential } from '../shared/merchants/service';

/**
 * `npm run merchant:create -- --name "Shop" [--environment test] [--scope full]`
 * Creates an active merchant and prints its credentials (shown once).
 */
async function main() {
  const { values } = parseArgs({
    options: {
      name: { type: 'string' },
      environment: { type: 'string', default: 'test' },
      scope: { type: 'string', default: 'full' },
    },
  });
  if (!values.name) throw new Error('--name is required');
  if (!['test', 'live'].includes(values.environment)) throw new Error('--environment must be test or live');
  if (!['read', 'payments', 'full'].includes(values.scope)) throw new Error('--scope must be read, payments or full');
  const config = getConfig();
  const db = createDb(config.databaseUrl, 2);
  try {
    const merchant = await createMerchant(db, { name: values.name });
    const credential = await issueCredential(
      db,
      merchant.id,
      { environment: values.environment as 'test' | 'live', scope: values.scope as 'read' | 'payments' | 'full' },
      config.secretsKeys,
    );
    process.stdout.write(
      JSON.stringify(
        {
          merchant_id: merchant.id,
          credential_id: credential.id,
          api_key: credential.api_key,
          secret: credential.secret,
          webhook_secret: credential.webhook_secret,
          scope: credential.scope,
          environment: credential.environment,
        },
        null,
        2,
      ) + '\n',
    );
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  process.stderr.write(`merchant:create failed: ${err.message}\n`);
  process.exit(1);
});
