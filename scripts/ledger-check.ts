import { getConfig } from '../shared/config';
import { createDb } from '../shared/db/knex';
import { checkLedger } from '../shared/ledger/check';

/** `npm run ledger:check`: exit 0 when every balance matches its entries and every posting sums to zero. */
async function main() {
  const db = createDb(getConfig().databaseUrl, 1);
  try {
    const problems = await checkLedger(db);
    const { rows } = await db.raw(
      'select count(*)::int as accounts, (select count(*)::int from ledger_transactions) as transactions from ledger_accounts',
    );
    if (problems.length) {
      for (const p of problems) process.stderr.write(`MISMATCH ${p}\n`);
      process.stderr.write(`ledger check failed: ${problems.length} problem(s)\n`);
      process.exitCode = 1;
    } else {
      process.stdout.write(`ledger ok: ${rows[0].accounts} accounts, ${rows[0].transactions} transactions balanced\n`);
    }
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  process.stderr.write(`ledger check could not run: ${err.message}\n`);
  process.exit(2);
});
