/**
 * npm run bench:checkout: how fast GET /checkout/{id} (the hosted card checkout, server-rendered)
 * answers. A card payment is created through the API; then, on one keep-alive connection, its
 * page is asked for one request after the other (per-request latency: median, p90, p99 over
 * BENCH_REQUESTS, default 5000, after 500 to warm up), then by BENCH_CONNECTIONS (default 16)
 * connections for BENCH_DURATION seconds (default 5; requests per second). The server runs in a
 * child process on real Postgres and Redis (a throwaway database cloned from the migrated
 * template; REDIS_URL), so the load generator does not take its CPU. Every answer must be 200
 * with the page, or the figures are void.
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { buildApp } from '../api/app';
import { ServiceClient } from '../shared/client/signing';
import { loadConfig } from '../shared/config';
import { createContext } from '../shared/context';
import { forkRole, stopRole } from './lib/processes';
import { seedMerchant, setUpStack, stopOnRequest } from './lib/stack';
import { closedLoop, closeServer, listen, percentile, portOf, runBench } from './bench-common';

interface Ready {
  port: number;
  path: string;
}

/** Child: the web app with one card payment. */
async function serve(): Promise<void> {
  const stack = await setUpStack();
  const config = loadConfig(stack.env);
  const services = createContext({ role: 'web', name: 'bench', config });
  stack.teardown.add(() => services.close());
  const server = await listen(buildApp(services));
  stack.teardown.add(() => closeServer(server));
  const port = portOf(server);
  config.baseUrl = `http://127.0.0.1:${port}`;
  const merchant = await seedMerchant(services, { name: 'Bench Café' });
  const client = new ServiceClient({ baseUrl: config.baseUrl, ...merchant });
  const created = await client.post('/v1/payments', {
    amount: 2_500,
    currency: 'USD',
    method: 'card',
    reference: `bench-${randomUUID()}`,
    description: 'Bench order',
    customer_email: 'client@shop.example',
    customer_name: 'Client',
    return_url: 'https://shop.example/return',
  });
  if (created.status !== 201) throw new Error(`POST /v1/payments answered ${created.status}: ${created.text}`);
  stopOnRequest(stack.teardown);
  process.send!({ port, path: new URL(created.body.checkout_url).pathname } satisfies Ready);
}

/** One GET on a keep-alive agent; its latency in ms. */
function timedGet(agent: http.Agent, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.get({ host: '127.0.0.1', port, path, agent, headers: { 'Accept-Language': 'fr' } }, (res) => {
      let size = 0;
      res.on('data', (c: Buffer) => (size += c.length));
      res.on('end', () => {
        if (res.statusCode !== 200 || size < 500)
          reject(new Error(`GET ${path} answered ${res.statusCode} (${size} bytes)`));
        else resolve(performance.now() - started);
      });
    });
    req.on('error', reject);
  });
}

/** Parent: the load. */
async function bench(): Promise<void> {
  const requests = Number(process.env.BENCH_REQUESTS || 5000);
  const duration = Number(process.env.BENCH_DURATION || 5);
  const connections = Number(process.env.BENCH_CONNECTIONS || 16);
  const { child, ready } = await forkRole<Ready>(__filename, '--serve');
  try {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < 500; i++) await timedGet(agent, ready.port, ready.path);
    const latencies: number[] = [];
    for (let i = 0; i < requests; i++) latencies.push(await timedGet(agent, ready.port, ready.path));
    agent.destroy();
    latencies.sort((a, b) => a - b);
    const ms = (v: number) => `${v.toFixed(2)} ms`;
    console.log(`GET /checkout/{id}, one connection, ${requests} requests one after the other:`);
    console.log(
      `  median ${ms(percentile(latencies, 50))}, p90 ${ms(percentile(latencies, 90))}, p99 ${ms(percentile(latencies, 99))}, max ${ms(latencies[latencies.length - 1])}  (target: median < 5 ms)`,
    );
    const load = await closedLoop(ready.port, {
      connections,
      seconds: duration,
      next: () => ({ method: 'GET', path: ready.path, headers: { 'accept-language': 'fr' } }),
    });
    const l = load.latencies;
    console.log(
      `GET /checkout/{id}, ${connections} connections for ${duration} s: ${Math.round(load.ok / load.seconds)} pages/s, ${load.errors} errors, median ${ms(percentile(l, 50))}, p99 ${ms(percentile(l, 99))}`,
    );
    if (load.errors) throw new Error(`${load.errors} requests failed: the figures are void`);
  } finally {
    await stopRole(child);
  }
}

runBench({ '--serve': serve }, bench);
