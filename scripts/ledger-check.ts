import { getConfig } from '../shared/config';
import { createDb } from '../shared/db/knex';
import { runLedgerCheck } from '../shared/ledger/check';

/**
 * `npm run ledger:check [-- --full]`: exit 0 when every balance matches its entries and every
 * posting sums to zero. Incremental by default: the closed months already checked are not read
 * again (shared/ledger/check.ts); `--full` reads every entry and also compares the kept months.
 */
async function main() {
  const full = process.argv.includes('--full');
  const db = createDb(getConfig().databaseUrl, 1);
  try {
    const report = await runLedgerCheck(db, { full });
    const { problems } = report;
    const { rows } = await db.raw(
      'select count(*)::int as accounts, (select count(*)::int from ledger_transactions) as transactions from ledger_accounts',
    );
    const read = report.monthsRead.length
      ? `${full ? 'full' : 'incremental'}: read ${report.monthsRead.length} month(s) from ${report.monthsRead[0].slice(0, 7)}, kept ${report.monthsKept.length} more`
      : `${full ? 'full' : 'incremental'}: no entries to read`;
    if (problems.length) {
      for (const p of problems) process.stderr.write(`MISMATCH ${p}\n`);
      process.stderr.write(`ledger check failed: ${problems.length} problem(s) (${read})\n`);
      process.exitCode = 1;
    } else {
      process.stdout.write(
        `ledger ok: ${rows[0].accounts} accounts, ${rows[0].transactions} transactions balanced (${read})\n`,
      );
    }
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  process.stderr.write(`ledger check could not run: ${err.message}\n`);
  process.exit(2);
});
