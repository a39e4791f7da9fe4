import { rmSync } from 'node:fs';
import pg from 'pg';
import { say } from './chaos-merchant';
import { sleep } from './lib/processes';
import { leaderOf, postmasterPid, switchover, waitHealthy, type HaNode, type HaTopology } from './ha';

/**
 * The database faults of `npm run chaos -- --topology cluster --db ha` (scripts/chaos-topology.ts):
 * the leader lost with its disk (kill -9 of its postmaster, its data directory deleted), and a
 * planned switchover. Each is timed: how long no leader took writes (through the leader's HAProxy,
 * the way PgBouncer reaches it), and how long until the cluster had a synchronous standby again.
 */

/** The goal for the time without a writable leader (docs/durability.md#drills). */
export const UNWRITABLE_GOAL_S = 30;

export interface LeaderChange {
  fault: string;
  from: string;
  to: string | undefined;
  /** seconds from the fault to the first write a leader accepted */
  unwritableS: number;
  /** seconds from the fault to a leader with a synchronous standby again */
  healthyS: number | undefined;
  /** the synchronous standby once healthy again */
  standby: string | undefined;
  ok: boolean;
}

/** One write through the leader's HAProxy, on a fresh connection, within 1 s. */
async function writeOnce(h: HaTopology): Promise<boolean> {
  const client = new pg.Client({
    host: '127.0.0.1',
    port: h.leaderPort,
    user: 'postgres',
    database: 'postgres',
    connectionTimeoutMillis: 1000,
    query_timeout: 1000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    // a transaction id is given to a primary's transaction only: a standby refuses
    await client.query('select txid_current()');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The instant of the first write accepted after `since` (tries every 100 ms, up to `timeoutMs`). */
async function firstWriteAfter(h: HaTopology, timeoutMs = 120_000): Promise<number | undefined> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await writeOnce(h)) return Date.now();
    await sleep(100);
  }
  return undefined;
}

async function afterChange(
  h: HaTopology,
  fault: string,
  from: HaNode,
  expected: HaNode,
  startedAt: number,
): Promise<LeaderChange> {
  const wrote = await firstWriteAfter(h);
  const unwritableS = ((wrote ?? Date.now()) - startedAt) / 1000;
  const to = await leaderOf(h);
  const healthy = await waitHealthy(h, 240_000).catch(() => undefined);
  const healthyS = healthy ? (Date.now() - startedAt) / 1000 : undefined;
  const change: LeaderChange = {
    fault,
    from: from.name,
    to: to?.name,
    unwritableS,
    healthyS,
    standby: healthy?.standby.name,
    ok:
      wrote !== undefined &&
      to === expected &&
      unwritableS <= UNWRITABLE_GOAL_S &&
      healthy?.leader === expected &&
      healthy.standby === from,
  };
  say(
    `${fault}: ${from.name} -> ${to?.name ?? 'none'}; no writable leader for ${unwritableS.toFixed(1)} s; ${healthy ? `${from.name} synchronous standby again after ${healthyS!.toFixed(1)} s` : 'no synchronous standby again'}`,
  );
  return change;
}

/** kill -9 of the leader's postmaster, then its data directory deleted: Patroni promotes the synchronous standby, and rebuilds the old node as its standby. */
export async function loseLeaderWithDisk(h: HaTopology): Promise<LeaderChange> {
  const { leader, standby } = await waitHealthy(h, 240_000);
  const pid = postmasterPid(leader);
  if (!pid) throw new Error(`no postmaster running for ${leader.name}`);
  say(`kill -9 of ${leader.name}'s postmaster (pid ${pid}), then its data directory deleted`);
  const startedAt = Date.now();
  process.kill(pid, 'SIGKILL');
  rmSync(leader.data, { recursive: true, force: true });
  return afterChange(h, `leader ${leader.name} killed, its disk lost`, leader, standby, startedAt);
}

/** A planned switchover to the synchronous standby (Patroni's REST /switchover, as patronictl does). */
export async function plannedSwitchover(h: HaTopology): Promise<LeaderChange> {
  const { leader, standby } = await waitHealthy(h, 240_000);
  say(`switchover ${leader.name} -> ${standby.name}`);
  const startedAt = Date.now();
  await switchover(h, leader, standby);
  return afterChange(h, `switchover ${leader.name} -> ${standby.name}`, leader, standby, startedAt);
}

/** The table of the leader changes. */
export function leaderChangesTable(changes: LeaderChange[]): string {
  const rows = [
    ['fault', 'new leader', 'no writable leader', 'synchronous standby again', 'ok'],
    ...changes.map((c) => [
      c.fault,
      c.to ?? 'none',
      `${c.unwritableS.toFixed(1)} s (goal <= ${UNWRITABLE_GOAL_S} s)`,
      c.healthyS === undefined ? 'never' : `${c.standby} after ${c.healthyS.toFixed(1)} s`,
      c.ok ? 'yes' : 'NO',
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i])).join('  ')).join('\n');
}
