/**
 * npm run bench:pipeline: authenticated requests per second through the whole merchant pipeline
 * (spec 5.6) against a bare Koa app, in the same run, on the same machine.
 *
 *   bare     Koa, one route: GET answers {ok}, POST reads the body with raw-body and parses it
 *            (what any JSON endpoint must do), then answers {ok}
 *   pipeline buildApp() (request id, security headers, errors, maintenance flag, the whole
 *            pipeline: credential lookup, Redis rate limit, timestamp, HMAC over the body, scope,
 *            JSON) in front of the same trivial route, on real Postgres and Redis
 *
 * The servers run in a child process, autocannon in this one, so the load generator does not
 * take the servers' CPU. Signed POSTs come from a precomputed set (distinct bodies, timestamps
 * valid for the run). The merchant's rate limit is raised (RATE_LIMIT_PER_MINUTE, refused in
 * production). Every response must be 2xx or the figures are void.
 *
 * Options (environment): BENCH_DURATION seconds per run (default 10), BENCH_CONNECTIONS
 * (default 32). Uses DATABASE server of TEST_DATABASE_SERVER_URL (a throwaway database cloned
 * from the migrated template) and REDIS_URL.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import autocannon from 'autocannon';
import Koa, { type Middleware } from 'koa';
import Router from '@koa/router';
import getRawBody from 'raw-body';
import { buildApp } from '../api/app';
import { signRequest } from '../shared/client/signing';
import { loadConfig } from '../shared/config';
import { createContext } from '../shared/context';
import { createMerchant, issueCredential } from '../shared/merchants/service';
import { createTestDatabase } from '../test/helpers/databases';

interface Ready {
  bare: number;
  pipeline: number;
  apiKey: string;
  secret: string;
}

const listen = (app: Koa): Promise<Server> =>
  new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
const portOf = (s: Server) => (s.address() as AddressInfo).port;

/** Child: both servers. */
async function serve(): Promise<void> {
  const database = await createTestDatabase();
  const config = loadConfig({
    ...process.env,
    NODE_ENV: 'development',
    DATABASE_URL: database.url,
    QUEUE_PREFIX: `{bench${randomBytes(3).toString('hex')}}`,
    RATE_LIMIT_PER_MINUTE: String(1_000_000_000),
    LOG_LEVEL: 'silent',
  });
  const services = createContext({ role: 'web', name: 'bench', config });

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

  const merchant = await createMerchant(services.db, { name: 'Bench merchant' });
  const cred = await issueCredential(services.db, merchant.id, { environment: 'test', scope: 'full' }, config.secretsKeys);
  const [bareServer, appServer] = await Promise.all([listen(bare), listen(app)]);

  const stop = async () => {
    await Promise.all([bareServer, appServer].map((s) => new Promise((r) => s.close(r))));
    bareServer.closeAllConnections();
    appServer.closeAllConnections();
    const keys = await services.redis.keys(`${config.queuePrefix}:*`).catch(() => [] as string[]);
    if (keys.length) await services.redis.del(...keys).catch(() => undefined);
    await services.close();
    await database.drop();
    process.exit(0);
  };
  process.on('message', (m) => m === 'stop' && void stop());
  process.on('disconnect', () => void stop());
  const ready: Ready = { bare: portOf(bareServer), pipeline: portOf(appServer), apiKey: cred.api_key, secret: cred.secret };
  process.send!(ready);
}

/** Parent: the load. */
async function bench(): Promise<void> {
  const duration = Number(process.env.BENCH_DURATION || 10);
  const connections = Number(process.env.BENCH_CONNECTIONS || 32);
  const child: ChildProcess = fork(__filename, ['--serve'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Ready));
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });

  const ts = String(Math.floor(Date.now() / 1000)); // valid for 5 minutes: longer than the runs
  const posts = Array.from({ length: 1000 }, (_, i) => {
    const body = JSON.stringify({ amount: 1000 + i, currency: 'USD', method: 'mobile_money', operator: 'vodacom', phone: '243990000001', reference: `bench-${i}` });
    return {
      method: 'POST' as const,
      path: '/v1/bench',
      body,
      headers: {
        authorization: `Bearer ${ready.apiKey}`,
        'content-type': 'application/json',
        'x-timestamp': ts,
        'x-signature': signRequest(ready.secret, ts, 'POST', '/v1/bench', body),
      },
    };
  });
  const barePosts = posts.map((p) => ({ method: p.method, path: p.path, body: p.body, headers: { 'content-type': 'application/json' } }));

  async function run(name: string, port: number, opts: Partial<autocannon.Options>) {
    const base = { url: `http://127.0.0.1:${port}`, connections, pipelining: 1, ...opts } as autocannon.Options;
    await autocannon({ ...base, duration: 2 }); // warm-up: JIT, pools, credential cache
    const r = await autocannon({ ...base, duration });
    const bad = r.non2xx + r.errors + r.timeouts;
    if (bad > 0) throw new Error(`${name}: ${bad} responses were not 2xx (non2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts}); figures void`);
    return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, total: r.requests.total };
  }

  try {
    const auth = { authorization: `Bearer ${ready.apiKey}` };
    const results = [
      await run('bare     GET ', ready.bare, { url: `http://127.0.0.1:${ready.bare}/v1/bench`, method: 'GET' }),
      await run('pipeline GET ', ready.pipeline, { url: `http://127.0.0.1:${ready.pipeline}/v1/bench`, method: 'GET', headers: auth }),
      await run('bare     POST', ready.bare, { requests: barePosts }),
      await run('pipeline POST', ready.pipeline, { requests: posts }),
    ];
    const [bareGet, pipeGet, barePost, pipePost] = results;
    console.log(`\nmerchant pipeline bench: ${duration} s per run, ${connections} connections, node ${process.version}\n`);
    console.log('run            req/s      p50 ms  p99 ms  requests');
    for (const r of results) {
      console.log(`${r.name}  ${r.rps.toFixed(0).padStart(8)}  ${String(r.p50).padStart(7)}  ${String(r.p99).padStart(6)}  ${String(r.total).padStart(8)}`);
    }
    const postRatio = pipePost.rps / barePost.rps;
    const getRatio = pipeGet.rps / bareGet.rps;
    console.log(`\nratio GET  pipeline/bare: ${(getRatio * 100).toFixed(1)} %`);
    console.log(`ratio POST pipeline/bare: ${(postRatio * 100).toFixed(1)} %  (target >= 25 %: ${postRatio >= 0.25 ? 'met' : 'MISSED'})`);
  } finally {
    child.send('stop');
    await new Promise((r) => child.once('exit', r));
  }
}

if (process.argv.includes('--serve')) {
  serve().catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  bench().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
