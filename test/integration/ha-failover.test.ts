import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pgbouncerPidFile, startPgbouncer, topologyAt, type Topology } from '../../scripts/cluster';
import { waitFor } from '../../scripts/lib/processes';
import { haDown, haTopologyAt, haUp, leaderOf, postmasterPid, type HaTopology } from '../../scripts/ha';
import { migrate } from '../../scripts/migrate';
import { portOpen } from '../../scripts/local-services';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { aMerchant, mobilePayment } from '../helpers/money';
import { ServiceClient } from '../../shared/client/signing';

/**
 * The short failover of docs/durability.md#highly-available-postgres, for CI: the service on a highly available Postgres (etcd,
 * two Postgres 15 nodes under Patroni with a synchronous standby, HAProxy following the leader,
 * PgBouncer in front: scripts/ha.ts and scripts/cluster.ts), under a steady load of payments.
 * The leader's postmaster is killed with kill -9 once. Every payment acknowledged with 201
 * exists afterwards with its history, none is doubled, every request is answered within bounds,
 * and the time without a writable leader stays within 30 s. The long drill (data directory
 * deleted, rebuild, switchover) is `npm run chaos -- --topology cluster --db ha`.
 */
describe('HA Postgres: the leader killed under load (Patroni, synchronous standby)', function () {
  this.timeout(240_000);
  let h: HaTopology;
  let pooler: Topology;
  let env: TestEnv;
  let shop: MerchantFixture;
  /** set when the load must end: by the test, or by `after` when the test failed midway */
  let stop = false;

  /** `n` consecutive free ports from `from` to `to` */
  async function freeRun(from: number, to: number, n: number, step = 1): Promise<number> {
    for (let base = from; base + n - 1 <= to; base += step) {
      const taken = await Promise.all(Array.from({ length: n }, (_, i) => portOpen(base + i)));
      if (!taken.some(Boolean)) return base;
    }
    throw new Error(`no ${n} free ports between ${from} and ${to}`);
  }

  before(async () => {
    h = haTopologyAt(await freeRun(5433, 5440, 5), await freeRun(5441, 5449, 2, 2));
    await haUp(h);
    // PgBouncer in front of the leader's HAProxy, as cluster:up --db ha puts it
    pooler = { ...topologyAt(await freeRun(5300, 5499, 8, 10)), dir: path.join(h.dir, 'pooler') };
    startPgbouncer(pooler, { host: '127.0.0.1', port: h.leaderPort });
    await waitFor('PgBouncer', () => portOpen(pooler.pgbouncerPort));
    const databaseUrl = `postgres://postgres@127.0.0.1:${pooler.pgbouncerPort}/svc_ha_failover`;
    await migrate(databaseUrl);
    env = await startTestEnv({
      DATABASE_URL: databaseUrl,
      DB_PREPARED_STATEMENTS: 'false',
      RATE_LIMIT_PER_MINUTE: '1000000',
    });
    const m = await aMerchant(env);
    // a request unanswered after 20 s is a hang: it fails the test instead of stalling it
    shop = {
      ...m,
      client: new ServiceClient({
        ...m.client.opts,
        fetch: (url, init) => fetch(url, { ...init, signal: AbortSignal.timeout(20_000) }),
      }),
    };
  });
  after(async () => {
    stop = true;
    await env?.close();
    if (pooler && existsSync(pgbouncerPidFile(pooler))) {
      try {
        process.kill(Number(readFileSync(pgbouncerPidFile(pooler), 'utf8')), 'SIGTERM');
      } catch {
        // gone
      }
    }
    if (h) await haDown(h);
    if (pooler) rmSync(pooler.dir, { recursive: true, force: true });
  });

  /** answers counted by status and code, e.g. `503 service-unavailable × 12, 0 fetch failed × 3` */
  const tally = (list: { status: number; code?: string }[]) => {
    const counts = new Map<string, number>();
    for (const a of list) {
      const k = `${a.status} ${a.code ?? ''}`.trim();
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    return [...counts].map(([k, n]) => `${k} × ${n}`).join(', ') || 'none';
  };

  it('loses no acknowledged payment, doubles none, answers every request in bounds, and has a writable leader again within 30 s', async () => {
    const acknowledged = new Map<string, string>(); // idempotency key -> payment id
    const answers: { status: number; code?: string; ms: number; at: number }[] = [];
    let keys = 0;
    /** a merchant's loop: each payment posted until it gets 201, with the same key (a 503 or a dropped connection is retried) */
    const writer = async () => {
      while (!stop) {
        const key = randomUUID();
        // one request per key, sent again as it was: a new body (another reference) under the
        // key of a payment whose 201 was lost is a different request (409 idempotency-conflict)
        const payment = mobilePayment('243990000001');
        keys++;
        const since = Date.now();
        let tries = 0;
        for (;;) {
          const t0 = Date.now();
          const res = await shop.client.post('/v1/payments', payment, { idempotencyKey: key }).catch((err: Error) => ({
            status: err.name === 'TimeoutError' ? -1 : 0,
            body: { error: { code: err.message } },
          }));
          if (res.status === -1) throw new Error(`POST /v1/payments unanswered after 20 s (key ${key})`);
          const code = (res.body as { error?: { code?: string } } | undefined)?.error?.code;
          answers.push({ status: res.status, code, ms: Date.now() - t0, at: Date.now() });
          tries++;
          if (res.status === 201) {
            acknowledged.set(key, res.body.id);
            break;
          }
          // a dropped connection, 503 while there is no leader, or 409 idempotency-in-progress while the
          // key's first request is still running; nothing else
          expect([0, 409, 503], JSON.stringify(res.body)).to.include(res.status);
          if (res.status === 409) expect(code, JSON.stringify(res.body)).to.equal('idempotency-in-progress');
          // a payment refused for a minute is a service that did not come back: fail, and say how
          if (Date.now() - since > 60_000)
            throw new Error(`key ${key} refused for 60 s, ${tries} tries, the last: ${res.status} ${code ?? ''}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    };
    const writers = [writer(), writer(), writer()];
    // a writer that throws (an unanswered request, a code out of bounds) fails the test at once
    const load = Promise.all(writers);
    load.catch(() => (stop = true));
    await new Promise((r) => setTimeout(r, 3000));
    const before = acknowledged.size;
    expect(before, 'payments acknowledged before the fault').to.be.greaterThan(5);

    const leader = (await leaderOf(h))!;
    const killedAt = Date.now();
    process.stdout.write(`      ${before} payments acknowledged; kill -9 of ${leader.name}'s postmaster\n`);
    process.kill(postmasterPid(leader)!, 'SIGKILL');
    // the load goes on until payments are acknowledged again through a new leader, then 3 s more
    await Promise.race([
      load,
      waitFor(
        'a payment acknowledged after the kill',
        () => answers.some((a) => a.status === 201 && a.at - a.ms > killedAt),
        60_000,
      ),
    ]).catch((err: Error) => {
      stop = true;
      throw new Error(`${err.message}; answers since the kill: ${tally(answers.filter((a) => a.at > killedAt))}`);
    });
    const firstAfter = answers
      .filter((a) => a.status === 201 && a.at - a.ms > killedAt)
      .reduce((m, a) => Math.min(m, a.at), Infinity);
    await new Promise((r) => setTimeout(r, 3000));
    stop = true;
    await load;
    process.stdout.write(`      writers stopped\n`);
    const newLeader = await leaderOf(h);

    const unwritable = (firstAfter - killedAt) / 1000;
    const refused = tally(answers.filter((a) => a.status !== 201));
    const slowest = Math.max(...answers.map((a) => a.ms));
    process.stdout.write(
      `      leader ${leader.name} killed; new leader ${newLeader?.name}; no writable leader for ${unwritable.toFixed(1)} s; ${acknowledged.size} payments acknowledged (${before} before the kill), answers retried: ${refused}; slowest answer ${slowest} ms\n`,
    );
    expect(newLeader, 'a leader again').to.not.equal(undefined);
    expect(newLeader!.name, 'the synchronous standby took over').to.not.equal(leader.name);
    expect(unwritable, 'seconds without a writable leader').to.be.at.most(30);
    expect(slowest, 'every request answered within the service bounds').to.be.at.most(15_000);

    // every acknowledged payment is there, once, with its creation in its history
    expect(acknowledged.size).to.equal(keys);
    const ids = [...acknowledged.values()];
    const rows = await env.services.db('payments').whereIn('id', ids).select('id');
    expect(rows.length, 'acknowledged payments present').to.equal(ids.length);
    const history = await env.services
      .db('payment_status_changes')
      .whereIn('payment_id', ids)
      .where({ from_status: null })
      .select('payment_id');
    expect(new Set(history.map((r) => r.payment_id)).size, 'each with its creation in its history').to.equal(
      ids.length,
    );
    const all = await env.services
      .db('payments')
      .where({ merchant_id: shop.merchant.id })
      .count<{ c: string }[]>('* as c');
    expect(Number(all[0].c), 'no payment doubled: one per idempotency key').to.equal(keys);
  });
});
