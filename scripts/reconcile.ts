import { parseArgs } from 'node:util';
import { getConfig } from '../shared/config';
import { createContext } from '../shared/context';
import { reconcileDay } from '../shared/reconciliation/run';
import { isDay } from '../shared/reconciliation/days';
import { CATEGORIES } from '../shared/providers/report';
import { RECONCILED_CONNECTORS } from '../shared/reconciliation/sources';

/**
 * `npm run reconcile -- --connector pawapay --day 2026-11-27`: reconciles one connector's business
 * day (docs/reconciliation.md) and prints its table. Idempotent: a run again replaces the day's
 * items and posts no fee twice. Exit 0 when the day reconciled (whatever it found), 1 when it
 * could not (no statement, the day not final yet), 2 on a wrong argument.
 */
async function main() {
  const { values } = parseArgs({
    options: { connector: { type: 'string' }, day: { type: 'string' }, force: { type: 'boolean' } },
  });
  if (!values.connector || !RECONCILED_CONNECTORS.includes(values.connector) || !values.day || !isDay(values.day)) {
    process.stderr.write(
      `usage: npm run reconcile -- --connector ${RECONCILED_CONNECTORS.join('|')} --day YYYY-MM-DD\n`,
    );
    process.exit(2);
  }
  const ctx = createContext({ role: 'worker', name: 'reconcile', config: getConfig(), poolMax: 4 });
  try {
    const run = await reconcileDay(ctx, values.connector, values.day, { force: values.force });
    process.stdout.write(`reconciliation ${run.id}: ${run.connector} ${run.day}\n`);
    for (const c of CATEGORIES) process.stdout.write(`  ${c.padEnd(16)} ${run.counts[c]}\n`);
    for (const [currency, fee] of Object.entries(run.fees))
      process.stdout.write(`  provider fees    ${fee} ${currency} (minor units)\n`);
    for (const b of run.balances)
      process.stdout.write(
        `  wallet ${b.currency}: reported ${b.reported}, expected ${b.expected}, difference ${b.difference}${b.flagged ? ' FLAGGED' : ''} (${b.source})\n`,
      );
    for (const s of run.settled) process.stdout.write(`  status query: ${s.object_id} → ${s.status}\n`);
  } catch (err) {
    process.stderr.write(`reconciliation could not run: ${(err as Error).message}\n`);
    process.exitCode = 1;
  } finally {
    await ctx.close();
  }
}

void main();
