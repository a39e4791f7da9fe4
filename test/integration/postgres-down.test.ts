import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { expect } from 'chai';
import knexFactory from 'knex';
import { buildApp } from '../../api/app';
import { answerOf } from '../../api/middleware/errors';
import { ServiceClient } from '../../shared/client/signing';
import { loadConfig } from '../../shared/config';
import { createContext, type ServiceContext } from '../../shared/context';
import { createLogger } from '../../shared/logger';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { freePort } from '../../scripts/lib/ports';
import { eventually } from '../../scripts/lib/processes';

/**
 * docs/decisions.md#backends-down: Postgres unreachable answers 503
 * service-unavailable with Retry-After: 5 and is logged as a Postgres fault, not a Redis one. A
 * second web app, sharing this file's Redis and queues, points at a Postgres port nothing listens
 * on; its log lines are captured. A connection cut under a running query (pg_terminate_backend)
 * is taken for the same fault.
 */
describe('Postgres unreachable from the web', () => {
  let env: TestEnv;
  let m: MerchantFixture;
  let down: ServiceContext;
  let server: Server;
  let client: ServiceClient;
  const lines: Array<{ msg?: string; level?: number; err?: { message?: string } }> = [];

  before(async () => {
    env = await startTestEnv();
    m = await env.merchant({ scope: 'full' });
    const config = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/nothing_listens`,
      REDIS_URL: env.processEnv.REDIS_URL,
      QUEUE_PREFIX: env.processEnv.QUEUE_PREFIX,
      ADMIN_API_TOKEN: env.processEnv.ADMIN_API_TOKEN,
      OVERLOAD_MAX_WAITING: '0',
      OVERLOAD_MAX_WAIT_MS: '0',
    });
    down = createContext({ role: 'web', name: 'web-postgres-down', config });
    down.log = createLogger('info', 'web-postgres-down', {
      write: (line: string) => void lines.push(JSON.parse(line)),
    });
    const app = buildApp(down);
    server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    client = new ServiceClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      apiKey: m.credential.api_key,
      secret: m.credential.secret,
    });
  });
  after(async () => {
    await new Promise((r) => server.close(r));
    await down.close();
    await env.close();
  });

  it('answers 503 service-unavailable with Retry-After: 5 to reads and writes, and logs a Postgres fault', async () => {
    const answers = [
      await client.get('/v1/balance'),
      await client.get('/v1/payments'),
      await client.post('/v1/payments', {
        amount: 1000,
        currency: 'USD',
        method: 'mobile_money',
        operator: 'vodacom',
        phone: '243990000001',
        reference: 'pg-down',
      }),
      await client.post('/v1/payouts', {
        amount: 1000,
        currency: 'USD',
        operator: 'vodacom',
        phone: '243990000001',
        reference: 'pg-down',
      }),
    ];
    for (const res of answers) {
      expect(res.status, JSON.stringify(res.body)).to.equal(503);
      expect(res.body.error.code).to.equal('service-unavailable');
      expect(res.headers.get('retry-after')).to.equal('5');
      expect(res.body.error.request_id).to.be.a('string');
    }
    const faults = lines.filter((l) => l.msg === 'postgres unavailable');
    expect(faults, 'one Postgres fault logged per request').to.have.length(answers.length);
    expect(faults[0].level).to.equal(50); // error
    expect(faults[0].err?.message).to.match(/ECONNREFUSED/);
    expect(
      lines.filter((l) => /redis/i.test(l.msg ?? '')),
      'not called a Redis fault',
    ).to.deep.equal([]);
    expect(lines.filter((l) => l.msg === 'unhandled error')).to.deep.equal([]);
  });

  it('takes a connection cut under a running query (pg_terminate_backend) for a Postgres fault', async () => {
    const victim = knexFactory({
      client: 'pg',
      connection: { connectionString: env.config.databaseUrl, application_name: 'pg-down-victim' },
      pool: { min: 0, max: 1 },
    });
    try {
      const running = victim.raw('select pg_sleep(30)').then(
        () => null,
        (err: unknown) => err,
      );
      const pid = await eventually(
        async () => {
          const { rows } = await env.services.db.raw(
            `select pid from pg_stat_activity where application_name = 'pg-down-victim' and state = 'active'`,
          );
          return rows[0]?.pid;
        },
        10_000,
        20,
      );
      await env.services.db.raw('select pg_terminate_backend(?)', [pid]);
      const err = await running;
      expect(err, 'the query failed').to.be.instanceOf(Error);
      const answer = answerOf(err, env.config.databaseUrl);
      expect(answer.log).to.equal('postgres');
      expect(answer.error).to.include({ code: 'service-unavailable', retryAfter: 5 });
    } finally {
      await victim.destroy();
    }
  });
});
