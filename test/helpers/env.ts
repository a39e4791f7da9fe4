import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../../shared/config';
import { createContext, type ServiceContext } from '../../shared/context';
import { buildApp, type AppOptions } from '../../api/app';
import { ServiceClient } from '../../shared/client/signing';
import { PaymentsApi, type RetryOptions } from '../../shared/client/sdk';
import { createTestDatabase } from '../../scripts/lib/databases';
import { checkLedger } from '../../shared/ledger/check';
import { fileClock, type Clock } from '../../shared/clock';
import { startProcess, type RunningProcess } from '../../scripts/lib/processes';
import { contract } from './contract';
import { parsedBody } from './http';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/**
 * The merchant client of the tests: signs like a merchant's, and checks every answer against the
 * OpenAPI document (test/helpers/contract.ts), so the integration tests prove the contract.
 * `checked` false: an app with stand-in routes (extraV1Routes), whose answers are not the API's.
 * `now`: the clock it signs by (X-Timestamp), the service's in the tests that move it.
 */
export function testClient(
  baseUrl: string,
  credential: { api_key: string; secret: string },
  checked = true,
  now?: () => number,
): ServiceClient {
  return new ServiceClient({
    baseUrl,
    apiKey: credential.api_key,
    secret: credential.secret,
    onResponse: checked ? contract().check : undefined,
    now,
  });
}

export interface MerchantFixture {
  merchant: any;
  credential: any;
  client: ServiceClient;
}

export interface TestEnv {
  config: Config;
  services: ServiceContext;
  baseUrl: string;
  /** Environment variables a spawned process needs to share this file's database and queues. */
  processEnv: Record<string, string>;
  /**
   * The clock of the service's processes: every spawned one, and the in-process app unless the
   * file gave it a clock of its own. It follows the system clock until the test moves it.
   */
  clock: Clock & { advance(ms: number): void };
  admin(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; body: any }>;
  /** A merchant client for this service (contract-checked unless the app has stand-in routes), signing by the app's clock. */
  client(credential: { api_key: string; secret: string }, baseUrl?: string): ServiceClient;
  /** The typed SDK for this service, its answers contract-checked like the client's. */
  sdk(credential: { api_key: string; secret: string }, retry?: RetryOptions): PaymentsApi;
  merchant(opts?: {
    scope?: 'read' | 'payments' | 'full';
    environment?: 'test' | 'live';
    merchant?: Record<string, unknown>;
    ip_allowlist?: string[];
  }): Promise<MerchantFixture>;
  /** Starts a real process (e.g. 'workers/outbox-relay/index.ts') on this file's database and queues. */
  spawn(entry: string, env?: Record<string, string>): Promise<RunningProcess>;
  close(): Promise<void>;
}

/**
 * One isolated service per test file: its own database (cloned from the migrated template), its
 * own queue prefix, the web app on a random port, and any worker processes the file starts. Time
 * is moved, not slept through: spawned processes read `clock` (TEST_CLOCK_FILE: an offset in a
 * file of this service, which `clock.advance` rewrites), and so does the in-process app unless
 * `opts.clock` gives it another (a ManualClock of the file's: caches, a revoked key's grace).
 */
export async function startTestEnv(
  overrides: Record<string, string> = {},
  appOptions: AppOptions = {},
  opts: { clock?: Clock; databaseThrough?: number } = {},
): Promise<TestEnv> {
  const database = await createTestDatabase();
  // a pooler in front of Postgres (opts.databaseThrough: its port) reaches the same database
  const databaseUrl = opts.databaseThrough
    ? Object.assign(new URL(database.url), { port: String(opts.databaseThrough) }).toString()
    : database.url;
  const tag = randomBytes(4).toString('hex');
  const clockFile = path.join(tmpdir(), `svc-test-clock-${tag}`);
  let offset = 0;
  const writeOffset = () => {
    // written whole then renamed: a process reading it meanwhile sees the old offset or the new
    writeFileSync(`${clockFile}.next`, String(offset));
    renameSync(`${clockFile}.next`, clockFile);
  };
  writeOffset();
  const fileNow = fileClock(clockFile);
  const clock: TestEnv['clock'] = {
    now: () => fileNow.now(),
    advance(ms) {
      offset += ms;
      writeOffset();
    },
  };
  const baseEnv: Record<string, string> = {
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: `{t${tag}}`,
    ADMIN_API_TOKEN: ADMIN_TOKEN,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL || 'info',
    OUTBOX_RELAY_INTERVAL_MS: '200',
    TEST_CLOCK_FILE: clockFile,
    // most files create payments with no worker to take their jobs: the overload guard would
    // refuse them after a few seconds (test/integration/overload.test.ts turns it on)
    OVERLOAD_MAX_WAITING: '0',
    OVERLOAD_MAX_WAIT_MS: '0',
    OVERLOAD_MAX_LAG_MS: '0',
    OVERLOAD_MAX_IN_FLIGHT: '0',
    ...overrides,
  };
  const config = loadConfig({ ...baseEnv, LOG_LEVEL: process.env.TEST_LOG_LEVEL || 'silent' });
  const services = createContext({ role: 'web', name: 'web-test', config, clock: opts.clock });
  const app = buildApp(services, appOptions);
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  const baseUrl = `http://127.0.0.1:${port}`;
  config.baseUrl = baseUrl;
  const processEnv = { ...baseEnv, BASE_URL: baseUrl };
  const processes: RunningProcess[] = [];

  const admin: TestEnv['admin'] = async (method, path, body, headers = {}) => {
    const res = await fetch(baseUrl + path, {
      method,
      headers: {
        Authorization: `Bearer ${ADMIN_TOKEN}`,
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: parsedBody(await res.text()) };
  };

  // a merchant's clock agrees with the service's: the clients sign by the clock the app judges by
  const appClock = opts.clock ?? clock;
  const now = () => appClock.now();
  const client: TestEnv['client'] = (credential, url = baseUrl) =>
    testClient(url, credential, !appOptions.extraV1Routes, now);

  return {
    config,
    services,
    baseUrl,
    processEnv,
    clock,
    admin,
    client,
    sdk: (credential, retry = {}) =>
      new PaymentsApi({
        baseUrl,
        apiKey: credential.api_key,
        secret: credential.secret,
        onResponse: appOptions.extraV1Routes ? undefined : contract().check,
        now,
        ...retry,
      }),
    async merchant(opts = {}) {
      const m = await admin('POST', '/admin/merchants', {
        name: `Merchant ${randomBytes(3).toString('hex')}`,
        ...opts.merchant,
      });
      if (m.status !== 201) throw new Error(`merchant creation failed: ${JSON.stringify(m.body)}`);
      const c = await admin('POST', `/admin/merchants/${m.body.id}/credentials`, {
        environment: opts.environment ?? 'test',
        scope: opts.scope ?? 'full',
        ...(opts.ip_allowlist ? { ip_allowlist: opts.ip_allowlist } : {}),
      });
      if (c.status !== 201) throw new Error(`credential issue failed: ${JSON.stringify(c.body)}`);
      return { merchant: m.body, credential: c.body, client: client(c.body) };
    },
    async spawn(entry, env = {}) {
      const p = startProcess(entry, { ...processEnv, ...env });
      processes.push(p);
      await p.waitForLine((l) => typeof l === 'object' && /started|listening/.test(l.msg ?? ''));
      return p;
    },
    async close() {
      await Promise.all(processes.map((p) => p.kill()));
      await new Promise((r) => server.close(r));
      server.closeAllConnections();
      // every integration file ends with a sound ledger (what `npm run ledger:check` checks)
      const ledgerProblems = await checkLedger(services.db);
      const keys = await services.redis.keys(`${config.queuePrefix}:*`).catch(() => [] as string[]);
      for (let i = 0; i < keys.length; i += 500)
        await services.redis.del(...keys.slice(i, i + 500)).catch(() => undefined);
      await services.close();
      await database.drop();
      rmSync(clockFile, { force: true });
      if (ledgerProblems.length) throw new Error(`ledger check failed after this file:\n${ledgerProblems.join('\n')}`);
    },
  };
}
