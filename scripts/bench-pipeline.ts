/**
 * npm run bench:pipeline: authenticated requests per second through the whole merchant pipeline
 * (docs/decisions.md#merchant-pipeline) against a bare Koa app, in the same run, on the same machine.
 *
 *   bare     Koa, one route: GET answers {ok}, POST reads the body with raw-body and parses it
 *            (what any JSON endpoint must do), then answers {ok}
 *   pipeline buildApp() (request id, security headers, errors, maintenance flag, the whole
 *            pipeline: credential lookup, Redis rate limit, timestamp, HMAC over the body, scope,
 *            JSON) in front of the same trivial route, on real Postgres and Redis
 *
 * The servers run in a child process, autocannon in this one, so the load generator does not
 * take the servers' CPU. Every POST is built and signed when autocannon sends it (its
 * setupRequest hook): a new body (a unique reference) with the current X-Timestamp, since a
 * signature acts at most once (api/pipeline/replay.ts: the same signed POST again is 409
 * request-replayed), so the pipeline POST run includes the replay guard's record of each
 * signature. The bare POST runs send the same freshly built, signed requests (the bare server
 * ignores the headers), so both sides cost the load generator the same. The merchant's rate limit
 * is raised (RATE_LIMIT_PER_MINUTE, refused in production). Every response must be 2xx or the
 * figures are void.
 *
 * Options (environment): BENCH_DURATION seconds per run (default 5), BENCH_ROUNDS interleaved
 * rounds of the four runs (default 3; medians are reported), BENCH_CONNECTIONS (default 32). Uses DATABASE server of TEST_DATABASE_SERVER_URL (a throwaway database cloned
 * from the migrated template) and REDIS_URL.
 */
import autocannon from 'autocannon';
import Koa, { type Middleware } from 'koa';
import Router from '@koa/router';
import getRawBody from 'raw-body';
import { buildApp } from '../api/app';
import { signRequest } from '../shared/client/signing';
import { loadConfig } from '../shared/config';
import { closeServer, listen as listenOn, portOf, runBench } from './bench-common';
import { createContext } from '../shared/context';
import { forkRole, sleep, stopRole } from './lib/processes';
import { seedMerchant, setUpStack, stopOnRequest } from './lib/stack';

interface Ready {
  bare: number;
  pipeline: number;
  apiKey: string;
  secret: string;
}

/**
 * Requests still being handled: a load run ends by cutting its connections, not by waiting for
 * their answers, so the servers stop only once these are done (the pipeline's would otherwise
 * still be waiting for a Postgres connection when the pool closes).
 */
let handling = 0;
const listen = (app: Koa) => {
  const handle = app.callback();
  return listenOn((req, res) => {
    handling++;
    void Promise.resolve(handle(req, res)).finally(() => handling--);
  });
};

/** Child: both servers. */
async function serve(): Promise<void> {
  const stack = await setUpStack();
  const config = loadConfig(stack.env);
  const services = createContext({ role: 'web', name: 'bench', config });
  stack.teardown.add(() => services.close());

  const bare = new Koa();
  bare.use(async (ctx) => {
    if (ctx.method === 'POST') {
      const raw = await getRawBody(ctx.req, { limit: 100 * 1024 });
      ctx.status = 201;
      ctx.body = { ok: true, got: Object.keys(JSON.parse(raw.toString('utf8'))).length };
    } else {
      ctx.body = { ok: true };
    }
  });

  const trivial = new Router({ prefix: '/v1' });
  const handler: Middleware = (ctx) => {
    if (ctx.method === 'POST') {
      ctx.status = 201;
      ctx.body = { ok: true, got: Object.keys(ctx.state.body as object).length };
    } else {
      ctx.body = { ok: true };
    }
  };
  trivial.get('/bench', handler);
  trivial.post('/bench', handler);
  const app = buildApp(services, { extraV1Routes: trivial.routes() as Middleware });

  const merchant = await seedMerchant(services, { name: 'Bench merchant' });
  const [bareServer, appServer] = await Promise.all([listen(bare), listen(app)]);
  stack.teardown.add(async () => {
    await Promise.all([bareServer, appServer].map(closeServer));
    for (let waited = 0; handling > 0 && waited < 10_000; waited += 50) await sleep(50);
  });
  stopOnRequest(stack.teardown);
  const ready: Ready = {
    bare: portOf(bareServer),
    pipeline: portOf(appServer),
    apiKey: merchant.apiKey,
    secret: merchant.secret,
  };
  process.send!(ready);
}

/** Parent: the load. */
async function bench(): Promise<void> {
  const duration = Number(process.env.BENCH_DURATION || 5);
  const connections = Number(process.env.BENCH_CONNECTIONS || 32);
  const rounds = Number(process.env.BENCH_ROUNDS || 3);
  const { child, ready } = await forkRole<Ready>(__filename, '--serve');

  /**
   * A POST built and signed as it is sent, never twice the same: a unique reference per request
   * (a counter over the whole process), the timestamp of its sending.
   */
  let sent = 0;
  const signedPost = (): autocannon.Request => ({
    method: 'POST',
    path: '/v1/bench',
    setupRequest: (req) => {
      const n = sent++;
      const body = JSON.stringify({
        amount: 1000 + (n % 1000),
        currency: 'USD',
        method: 'mobile_money',
        operator: 'vodacom',
        phone: '243990000001',
        reference: `bench-${n}`,
      });
      const ts = String(Math.floor(Date.now() / 1000));
      return {
        ...req,
        body,
        headers: {
          ...req.headers,
          authorization: `Bearer ${ready.apiKey}`,
          'content-type': 'application/json',
          'x-timestamp': ts,
          'x-signature': signRequest(ready.secret, ts, 'POST', '/v1/bench', body),
        },
      };
    },
  });

  async function run(name: string, port: number, opts: Partial<autocannon.Options>) {
    const base = { url: `http://127.0.0.1:${port}`, connections, pipelining: 1, ...opts } as autocannon.Options;
    await autocannon({ ...base, duration: 1 }); // warm-up: JIT, pools, credential cache
    const r = await autocannon({ ...base, duration });
    const bad = r.non2xx + r.errors + r.timeouts;
    if (bad > 0)
      throw new Error(
        `${name}: ${bad} responses were not 2xx (non2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts}); figures void`,
      );
    return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, total: r.requests.total };
  }

  try {
    const auth = { authorization: `Bearer ${ready.apiKey}` };
    const cases = [
      {
        name: 'bare     GET ',
        port: ready.bare,
        opts: () => ({ url: `http://127.0.0.1:${ready.bare}/v1/bench`, method: 'GET' as const }),
      },
      {
        name: 'pipeline GET ',
        port: ready.pipeline,
        opts: () => ({ url: `http://127.0.0.1:${ready.pipeline}/v1/bench`, method: 'GET' as const, headers: auth }),
      },
      { name: 'bare     POST', port: ready.bare, opts: () => ({ requests: [signedPost()] }) },
      { name: 'pipeline POST', port: ready.pipeline, opts: () => ({ requests: [signedPost()] }) },
    ];
    // interleaved rounds: on a shared machine the load drifts, and a ratio of two runs far apart would measure the drift
    const perRound: Awaited<ReturnType<typeof run>>[][] = [];
    for (let round = 0; round < rounds; round++) {
      const results = [];
      for (const c of cases) results.push(await run(c.name, c.port, c.opts()));
      perRound.push(results);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      `\nmerchant pipeline bench: ${rounds} interleaved rounds of ${duration} s per run, ${connections} connections, node ${process.version}\n`,
    );
    console.log('run            req/s (median)  per round                 p50 ms  p99 ms');
    cases.forEach((c, i) => {
      const rps = perRound.map((r) => r[i].rps);
      const last = perRound[perRound.length - 1][i];
      console.log(
        `${c.name}  ${median(rps).toFixed(0).padStart(14)}  ${rps
          .map((x) => x.toFixed(0))
          .join(' / ')
          .padEnd(24)}  ${String(last.p50).padStart(6)}  ${String(last.p99).padStart(6)}`,
      );
    });
    const getRatios = perRound.map((r) => r[1].rps / r[0].rps);
    const postRatios = perRound.map((r) => r[3].rps / r[2].rps);
    const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
    console.log(
      `\nratio GET  pipeline/bare: ${pct(median(getRatios))} median (rounds: ${getRatios.map(pct).join(', ')})`,
    );
    const post = median(postRatios);
    console.log(
      `ratio POST pipeline/bare: ${pct(post)} median (rounds: ${postRatios.map(pct).join(', ')})  target >= 25 %: ${post >= 0.25 ? 'met' : 'MISSED'}`,
    );
  } finally {
    await stopRole(child);
  }
}

runBench({ '--serve': serve }, bench);
