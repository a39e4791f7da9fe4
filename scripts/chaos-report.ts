import type { Knex } from 'knex';
import { checkLedger } from '../shared/ledger/check';
import type { LeakScan } from './chaos-leaks';
import { ANSWER_BOUND_MS, type PartitionProbes } from './chaos-partition';
import { compareWithProvider, type ProviderComparison } from './chaos-provider';
import type { ReplayTally } from './chaos-replays';
import { KINDS, type Kind, type Tally } from './chaos-merchant';
import { sleep } from './lib/processes';

/**
 * The outcome of a chaos drill (the single-machine one and the one across the topology): the
 * wait for every object to be final, the objects table (requested, refused, created, final, lost,
 * doubled) and the checks, printed as two tables with a verdict.
 */

/** The statuses in which an object is not final yet. */
const OPEN: Record<Kind, string[]> = {
  payments: ['pending', 'processing'],
  refunds: ['pending'],
  payouts: ['pending', 'processing'],
};

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export const counted = (m: Map<string, number>) => [...m].map(([what, n]) => `${what} × ${n}`).join(', ');

export function formatTable(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(rows[0]), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(line)];
}

/** Waits, up to `drainS`, for every object of the merchant to be final and every event delivered. */
export async function waitUntilFinal(db: Knex, merchantId: string, drainS: number): Promise<void> {
  const openCount = async () => {
    let n = 0;
    for (const [table, open] of Object.entries(OPEN))
      n += Number(
        (await db(table).where({ merchant_id: merchantId }).whereIn('status', open).count<{ n: string }[]>('* as n'))[0]
          .n,
      );
    return n;
  };
  const undelivered = async () =>
    Number(
      (
        await db('webhook_deliveries as d')
          .join('events as e', 'e.id', 'd.event_id')
          .where('e.merchant_id', merchantId)
          .where('d.status', 'pending')
          .count<{ n: string }[]>('* as n')
      )[0].n,
    );
  const drainBy = Date.now() + drainS * 1000;
  while (Date.now() < drainBy && ((await openCount().catch(() => 1)) > 0 || (await undelivered().catch(() => 1)) > 0))
    await sleep(2000);
  // a delivery may have been received after its row was written
  await sleep(2000);
}

export interface Outcome {
  objectRows: string[][];
  /** webhook events, ledger, provider: <object> for each, signed replays */
  checks: Check[];
  lostOrDoubled: number;
  ledgerProblems: string[];
  providerMismatches: string[];
}

/**
 * What became of the merchant's requests: per kind, the objects lost (still open) and doubled
 * (two rows for one request, two postings or two final events for one object), and each final
 * status compared with the sandbox provider's; every event delivered; the ledger balanced; the
 * signed replays refused.
 */
export async function assessOutcome(
  db: Knex,
  merchantId: string,
  load: { tally: Record<Kind, Tally>; replays: { tally: ReplayTally } },
  received: Map<string, number>,
  provider: { url: string; apiKey: string },
): Promise<Outcome> {
  const objectRows: string[][] = [];
  const providerChecks: Check[] = [];
  const providerMismatches: string[] = [];
  let lostOrDoubled = 0;
  for (const table of KINDS) {
    const all = await db(table).where({ merchant_id: merchantId }).select('id', 'status', 'operator');
    const tableRow = await objectRow(db, merchantId, table, all, load.tally[table]);
    objectRows.push(tableRow.row);
    lostOrDoubled += tableRow.lostOrDoubled;
    const comparison = await compareWithProvider(provider.url, provider.apiKey, all);
    providerChecks.push(providerCheck(table, comparison));
    providerMismatches.push(...comparison.mismatches);
  }
  const ledgerProblems = await checkLedger(db);
  return {
    objectRows,
    checks: [
      await webhookCheck(db, merchantId, received),
      ledgerCheck(ledgerProblems),
      ...providerChecks,
      replayCheck(load.replays.tally),
    ],
    lostOrDoubled,
    ledgerProblems,
    providerMismatches,
  };
}

async function webhookCheck(db: Knex, merchantId: string, received: Map<string, number>): Promise<Check> {
  const events = await db('events')
    .where({ merchant_id: merchantId })
    .where((q) =>
      q.where('type', 'like', 'payment.%').orWhere('type', 'like', 'refund.%').orWhere('type', 'like', 'payout.%'),
    )
    .select('id');
  let once = 0;
  let more = 0;
  let never = 0;
  for (const e of events) {
    const n = received.get(e.id) ?? 0;
    if (n === 0) never++;
    else if (n === 1) once++;
    else more++;
  }
  return {
    name: 'webhook events',
    ok: never === 0,
    detail: `${events.length} events: delivered once ${once}, more than once ${more}, never ${never}`,
  };
}

function providerCheck(table: Kind, c: ProviderComparison): Check {
  const { once, more, none } = c.requests;
  return {
    name: `provider: ${table}`,
    ok: c.mismatches.length === 0,
    detail: `${c.asked} final asked, ${c.mismatches.length} disagree; create requests per operation: 1 for ${once}, more (same key) for ${more}, none for ${none}`,
  };
}

/** Every ledger transaction sums to zero and every cached balance equals its entries (shared/ledger/check.ts). */
export function ledgerCheck(problems: unknown[]): Check {
  return {
    name: 'ledger',
    ok: problems.length === 0,
    detail:
      problems.length === 0
        ? 'balanced (every transaction sums to zero, every cached balance equals its entries)'
        : `${problems.length} problems`,
  };
}

export function replayCheck(r: ReplayTally): Check {
  return {
    name: 'signed replays',
    ok: r.tried > 0 && r.refused === r.tried && r.acted === 0 && r.sameKeyAnswered === r.sameKey,
    detail: `tried ${r.tried} / refused ${r.refused} / acted ${r.acted}; same key: ${r.sameKeyAnswered} of ${r.sameKey} got the first answer${r.otherAnswers.size ? `; other answers: ${counted(r.otherAnswers)}` : ''}`,
  };
}

/** Every request timed during a fault (chaos-partition.ts) answered within ANSWER_BOUND_MS: 2xx, 4xx or 503 with Retry-After. */
export function boundedAnswersCheck(name: string, p: PartitionProbes | undefined): Check {
  if (!p) return { name, ok: false, detail: 'not run' };
  return {
    name,
    ok: p.total > 0 && p.withinBound === p.total,
    detail: `answered within ${ANSWER_BOUND_MS / 1000} s: ${p.withinBound}/${p.total}, longest answer ${(p.maxAnswerMs / 1000).toFixed(1)} s, hung ${p.hung}, dropped ${p.dropped}; ${counted(p.answers)}`,
  };
}

export function logLeaksCheck(scan: LeakScan, phoneLookups: Map<string, number>): Check {
  return {
    name: 'log leaks',
    ok: scan.leaks === 0,
    detail: `${scan.lines} lines scanned, ${scan.leaks} leaks; phone number lookups: ${counted(phoneLookups)}`,
  };
}

export interface Report {
  /** what was done: the load and the faults */
  headline: string;
  outcome: Outcome;
  tally: Record<Kind, Tally>;
  /** every check, in the order printed */
  checks: Check[];
  /** what the log scan found (examples are printed after the checks) */
  leaks: LeakScan;
  /** the last line: where the logs are */
  logs: string;
}

/** Prints the objects' and the checks' tables and the verdict; the exit code: 0 when nothing was lost or doubled and every check passed, else 1. */
export function printReport(r: Report): number {
  const failed = r.checks.filter((c) => !c.ok).map((c) => c.name);
  const passed = r.outcome.lostOrDoubled === 0 && failed.length === 0;
  process.stdout.write(
    [
      '',
      r.headline,
      ...formatTable([
        ['object', 'requested', 'refused', 'created', 'final', 'lost', 'doubled', 'final statuses'],
        ...r.outcome.objectRows,
      ]),
      ...Object.entries(r.tally)
        .filter(([, t]) => t.refused)
        .map(([k, t]) => `${k} refused: ${counted(t.why)}`),
      '',
      ...formatTable([
        ['check', 'result', 'detail'],
        ...r.checks.map((c) => [c.name, c.ok ? 'ok' : 'FAILED', c.detail]),
      ]),
      ...r.outcome.ledgerProblems.slice(0, 10).map((p) => `ledger: ${p}`),
      ...r.outcome.providerMismatches.slice(0, 5).map((m) => `provider disagrees: ${m}`),
      ...r.leaks.examples.map((e) => `leak: ${e}`),
      passed
        ? 'result: nothing lost, nothing doubled, every check passed'
        : `result: FAILED (${r.outcome.lostOrDoubled} lost or doubled${failed.length ? `; failed checks: ${failed.join(', ')}` : ''})`,
      r.logs,
      '',
    ].join('\n'),
  );
  return passed ? 0 : 1;
}

/**
 * One object table's row of the drill's table: what was asked and refused (the load's tally), what
 * exists, what is still open (lost), and what exists twice (a request, a posting or a final event).
 */
export async function objectRow(
  db: Knex,
  merchantId: string,
  table: Kind,
  all: { id: string; status: string }[],
  tally: Tally,
): Promise<{ row: string[]; lostOrDoubled: number }> {
  const lost = all.filter((r) => OPEN[table].includes(r.status)).length;
  const key = table === 'refunds' ? 'reason' : 'reference';
  const dupRequests = await db(table)
    .where({ merchant_id: merchantId })
    .groupBy(key)
    .havingRaw('count(*) > 1')
    .select(key);
  const dupPostings = await db('ledger_transactions')
    .whereIn(
      'reference_id',
      all.map((r) => r.id),
    )
    .groupBy('kind', 'reference_id')
    .havingRaw('count(*) > 1')
    .select('reference_id');
  const dupEvents = await db('events')
    .whereIn(
      'object_id',
      all.map((r) => r.id),
    )
    .whereIn('type', [
      `${table.slice(0, -1)}.succeeded`,
      `${table.slice(0, -1)}.failed`,
      `${table.slice(0, -1)}.cancelled`,
    ])
    .groupBy('object_id', 'type')
    .havingRaw('count(*) > 1')
    .select('object_id');
  const doubled = dupRequests.length + dupPostings.length + dupEvents.length;
  const byStatus = Object.entries(
    all.reduce<Record<string, number>>((m, r) => ((m[r.status] = (m[r.status] ?? 0) + 1), m), {}),
  )
    .map(([s, n]) => `${s} ${n}`)
    .join(', ');
  const { requested, refused } = tally;
  const row = [
    table,
    String(requested),
    String(refused),
    String(all.length),
    String(all.length - lost),
    String(lost),
    String(doubled),
    byStatus,
  ];
  return { row, lostOrDoubled: lost + doubled };
}
