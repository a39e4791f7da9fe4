/**
 * npm run bench:payments: POST /v1/payments through the whole service, against a bare Koa app
 * in the same run, on the same machine.
 *
 *   bare        Koa, one route: reads the body with raw-body, parses it, answers 201
 *   saturation  signed POST /v1/payments (unique reference and Idempotency-Key per request) as
 *               fast as the service takes them: web process, Postgres and Redis (the push jobs
 *               wait in Redis)
 *   steady      the same at a fixed rate (BENCH_RATE, default 500/s)
 *   flow        the backlog is discarded, the sandbox provider, provider-push and
 *               callback-reconciler start, and payments are created at BENCH_FLOW_RATE (default
 *               100/s): each is pushed and called back about 3 s later, so the web also takes
 *               the callbacks. Prints the median time from a sandbox callback's arrival (inbox
 *               row) to the payment's `succeeded` row.
 *
 * The web app and the bare app run in a child process, the load generator (bench-common.ts:
 * closed loop at saturation, evenly spaced open loop at a fixed rate, requests signed before
 * each run) in this one, the workers and the sandbox in their own processes. Every response
 * must be 2xx or the figures are void.
 * Options (environment): BENCH_DURATION seconds per run (default 10), BENCH_CONNECTIONS at
 * saturation (default 32), BENCH_RATE (default 500), BENCH_FLOW_RATE (default 100), BENCH_WEB_PROCESSES
 * (copies of the web process sharing the port, default 1). Uses a throwaway
 * database cloned from the migrated template on TEST_DATABASE_SERVER_URL's server, and REDIS_URL.
 */
import cluster from 'node:cluster';
import { buildApp } from '../api/app';
import { loadConfig } from '../shared/config';
import {
  BARE_REQUEST,
  bareKoaApp,
  closedLoop,
  closeServer,
  listen,
  openLoop,
  percentile,
  portOf,
  prepared,
  runBench,
  signedPayment,
  type LoadResult,
} from './bench-common';
import { createContext } from '../shared/context';
import { QUEUES } from '../shared/queues/names';
import { ask, exited, forkRole, startProcess, stopRole, type RunningProcess } from './lib/processes';
import { seedMerchant, setUpStack, stopOnRequest } from './lib/stack';

interface Ready {
  bare: number;
  web: number;
  apiKey: string;
  secret: string;
}

type Message = { cmd: 'start-workers' } | { cmd: 'callback-latency'; since: number } | { cmd: 'count'; since: number };

/** Child: the web app, the bare app, and on demand the sandbox and the workers. */
async function serve(): Promise<void> {
  const webProcesses = Number(process.env.BENCH_WEB_PROCESSES || 1);
  const stack = await setUpStack({ logLevel: 'warn' });
  const baseEnv = stack.env;
  const config = loadConfig({ ...baseEnv, LOG_LEVEL: 'silent' });
  const services = createContext({ role: 'web', name: 'bench', config, poolMax: 4 });
  stack.teardown.add(() => services.close());

  const bare = bareKoaApp();
  const merchant = await seedMerchant(
    services,
    { name: 'Bench merchant', fees: { USD: { percent_bps: 250, fixed: 10 } } },
    'payments',
  );
  const bareServer = await listen(bare);
  // the web processes: copies of the web app sharing one port, as an operator scales `web: N`
  cluster.setupPrimary({ exec: __filename, args: ['--web'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const webs = Array.from({ length: webProcesses }, () => cluster.fork({ ...baseEnv, LOG_LEVEL: 'silent' }));
  const webPort = (
    await Promise.all(webs.map((w) => new Promise<number>((r) => w.once('listening', (a) => r(a.port)))))
  )[0];
  config.baseUrl = `http://127.0.0.1:${webPort}`;
  const children: RunningProcess[] = [];

  const start = async (entry: string, env: Record<string, string>, ready: string) => {
    const child = startProcess(entry, { ...baseEnv, BASE_URL: config.baseUrl, ...env });
    children.push(child);
    return child.waitForLine((l) => l?.msg === ready, 60_000);
  };

  const handle = async (m: Message) => {
    if (m.cmd === 'start-workers') {
      // the earlier runs' push jobs are not part of the flow run
      await services.queues.get(QUEUES.providerPush).obliterate({ force: true });
      await services.db('payments').where({ status: 'processing' }).update({ status: 'cancelled' });
      const line = await start(
        'shared/providers/sandbox/server.ts',
        { SANDBOX_PROVIDER_PORT: '0', LOG_LEVEL: 'info' },
        'sandbox provider listening',
      );
      const sandboxUrl = line.url;
      await Promise.all([
        start(
          'workers/provider-push/index.ts',
          { SANDBOX_PROVIDER_URL: sandboxUrl, LOG_LEVEL: 'info' },
          'worker pool started',
        ),
        start(
          'workers/callback-reconciler/index.ts',
          { SANDBOX_PROVIDER_URL: sandboxUrl, LOG_LEVEL: 'info' },
          'worker pool started',
        ),
      ]);
      return { ok: true };
    }
    if (m.cmd === 'count') {
      const [{ c }] = await services.db('payments').where('created', '>=', m.since).count<{ c: number }[]>('* as c');
      return { count: Number(c) };
    }
    if (m.cmd === 'callback-latency') {
      const rows = await services.db.raw(
        `select p.status, extract(epoch from (s.at - c.received_at)) * 1000 as ms
           from payments p
           left join provider_callbacks c on c.object_id = p.id and c.outcome = 'applied'
           left join payment_status_changes s on s.payment_id = p.id and s.to_status = 'succeeded'
          where p.created >= ?`,
        [m.since],
      );
      return {
        rows: rows.rows.map((r: { status: string; ms: string | null }) => ({
          status: r.status,
          ms: r.ms === null ? null : Number(r.ms),
        })),
      };
    }
    return { ok: true };
  };

  stack.teardown.add(async () => {
    await Promise.all(children.map((c) => c.stop()));
    await Promise.all(webs.map((w) => (w.kill('SIGTERM'), exited(w.process))));
    await closeServer(bareServer);
  });
  process.on('message', (m: Message | { cmd: 'stop' }) => {
    if (m.cmd === 'stop') return;
    handle(m).then(
      (r) => process.send!(r),
      (err) => process.send!({ error: (err as Error).message }),
    );
  });
  stopOnRequest(stack.teardown);
  const ready: Ready = { bare: portOf(bareServer), web: webPort, apiKey: merchant.apiKey, secret: merchant.secret };
  process.send!(ready);
}

/** A web process of the bench: the real app on the bench's database and queues. */
function web(): void {
  const config = loadConfig(process.env);
  const services = createContext({ role: 'web', name: 'web', config, poolMax: 20 });
  const server = buildApp(services).listen(0, '127.0.0.1');
  server.on('listening', () => (config.baseUrl = `http://127.0.0.1:${portOf(server)}`));
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void services.close().finally(() => process.exit(0));
  });
}

/** Parent: the load. */
async function bench(): Promise<void> {
  const duration = Number(process.env.BENCH_DURATION || 10);
  const connections = Number(process.env.BENCH_CONNECTIONS || 32);
  const rate = Number(process.env.BENCH_RATE || 500);
  const flowRate = Number(process.env.BENCH_FLOW_RATE || 100);
  const { child, ready } = await forkRole<Ready>(__filename, '--serve');
  const call = <T>(m: Message) => ask<T>(child, m);

  // a new payment per request: unique reference and Idempotency-Key, signed as a merchant would
  const payment = () => signedPayment(ready, 'bench');
  const bareRequest = BARE_REQUEST;

  const summary = (name: string, r: LoadResult) => ({
    name,
    ok: r.ok,
    rps: r.ok / r.seconds,
    p50: percentile(r.latencies, 50),
    p95: percentile(r.latencies, 95),
    p99: percentile(r.latencies, 99),
    errors: r.errors,
  });
  // signed ahead: at most this many payments a second are expected from one run
  const enough = (perSecond: number, seconds: number) => prepared(Math.ceil(perSecond * seconds), payment);

  try {
    await closedLoop(ready.web, { connections, seconds: 3, next: enough(1000, 3) }); // warm-up
    const bareRun = summary(
      'bare POST',
      await closedLoop(ready.bare, { connections, seconds: duration, next: () => bareRequest }),
    );
    const satPayments = enough(3000, duration);
    const since1 = Math.floor(Date.now() / 1000);
    const sat = summary(
      'payments (saturation)',
      await closedLoop(ready.web, { connections, seconds: duration, next: satPayments }),
    );
    const created1 = (await call<{ count: number }>({ cmd: 'count', since: since1 })).count;
    const steady = summary(
      `payments (steady ${rate}/s)`,
      await openLoop(ready.web, { rate, seconds: duration, next: enough(rate, duration) }),
    );

    await call({ cmd: 'start-workers' });
    const since2 = Math.floor(Date.now() / 1000) + 1;
    await new Promise((r) => setTimeout(r, 1000));
    const flow = summary(
      `flow (${flowRate}/s + workers)`,
      await openLoop(ready.web, { rate: flowRate, seconds: duration, next: enough(flowRate, duration) }),
    );

    // wait for the flow run's payments to reach their outcome (sandbox: about 3 s)
    let latency: { status: string; ms: number | null }[] = [];
    for (let i = 0; i < 60; i++) {
      latency = (await call<{ rows: typeof latency }>({ cmd: 'callback-latency', since: since2 })).rows;
      if (latency.length && latency.every((r) => r.status !== 'processing')) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const ms = latency
      .filter((r) => r.ms !== null)
      .map((r) => r.ms!)
      .sort((a, b) => a - b);

    console.log(
      `\npayments bench: ${duration} s per run, ${connections} connections at saturation, fixed-rate runs evenly spaced, ${process.env.BENCH_WEB_PROCESSES || 1} web process(es), node ${process.version}\n`,
    );
    console.log('run                           created/s   p50 ms   p95 ms   p99 ms  errors');
    const ms1 = (n: number) => n.toFixed(1).padStart(7);
    const line = (r: ReturnType<typeof summary>) =>
      console.log(
        `${r.name.padEnd(28)}  ${r.rps.toFixed(0).padStart(9)}  ${ms1(r.p50)}  ${ms1(r.p95)}  ${ms1(r.p99)}  ${String(r.errors).padStart(6)}`,
      );
    [bareRun, sat, steady, flow].forEach(line);
    console.log(`\nsaturation: ${sat.ok} answered 201, ${created1} payments in the database`);
    console.log(`ratio payments/bare at saturation: ${((sat.rps / bareRun.rps) * 100).toFixed(1)} %`);
    console.log(`target >= 1500 created/s at saturation: ${sat.rps >= 1500 && sat.errors === 0 ? 'met' : 'MISSED'}`);
    console.log(
      `target p99 < 50 ms at a steady ${rate}/s: ${steady.p99 < 50 && steady.errors === 0 && steady.rps >= rate * 0.95 ? 'met' : 'MISSED'}`,
    );
    const statuses = latency.reduce<Record<string, number>>(
      (acc, r) => ((acc[r.status] = (acc[r.status] ?? 0) + 1), acc),
      {},
    );
    console.log(`\nflow run's payments: ${JSON.stringify(statuses)}`);
    if (ms.length) {
      console.log(
        `sandbox callback arrival → succeeded row: median ${percentile(ms, 50).toFixed(1)} ms, p99 ${percentile(ms, 99).toFixed(1)} ms (${ms.length} payments)`,
      );
    }
  } finally {
    await stopRole(child);
  }
}

runBench({ '--web': web, '--serve': serve }, bench);
