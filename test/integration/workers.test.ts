import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { eventually } from '../../scripts/lib/processes';
import { freePort } from '../../scripts/lib/ports';
import { transact } from '../../shared/db/transact';
import { QUEUES } from '../../shared/queues/names';
import { outboxJobId, writeOutbox } from '../../shared/queues/outbox';
import { POOL_NICENESS } from '../../workers/priority';

function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('Ready to accept connections')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited ${code}`)));
  });
}

async function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

describe('outbox relay', () => {
  let env: TestEnv;
  let redis: ChildProcess;
  let port: number;

  before(async () => {
    port = await freePort();
    redis = await startRedis(port);
    env = await startTestEnv({ REDIS_URL: `redis://127.0.0.1:${port}` });
  });
  after(async () => {
    if (redis.exitCode !== null) redis = await startRedis(port);
    await env.close();
    await stopRedis(redis);
  });

  it('enqueues a row committed while Redis was down once Redis is back, exactly once', async () => {
    await stopRedis(redis);
    const msg = await transact(env.services, (_trx, outbox) =>
      outbox.add(QUEUES.refund, 'relay-test', { marker: 'relay' }),
    );
    const row = await env.services.db('outbox').where({ id: msg.id }).first();
    expect(row, 'the committed row stays in the outbox').to.exist;
    expect(row.enqueued_at, 'not enqueued while Redis is down').to.equal(null);

    await env.spawn('workers/outbox-relay/index.ts');
    redis = await startRedis(port);

    const job = await eventually(
      async () => (await env.services.queues.ready(QUEUES.refund)).getJob(outboxJobId(msg.id)),
      15_000,
    );
    const queue = await env.services.queues.ready(QUEUES.refund);
    expect(job.name).to.equal('relay-test');
    expect(job.data).to.deep.equal({ marker: 'relay' });
    await eventually(async () => (await env.services.db('outbox').where({ id: msg.id }).first()).enqueued_at);
    // a later relay pass finds nothing left to send: once its job is gone (as after it ran and
    // was removed), the relay does not enqueue it again (BullMQ's jobId dedupe cannot hide that).
    // A pass that ran after the removal is seen by a marker row written now with no immediate
    // enqueue: the relay takes rows oldest first, so once the marker's job exists, the pass
    // that enqueued it had already enqueued the first row again if it were going to
    await job.remove();
    const marker = await writeOutbox(env.services.db, QUEUES.refund, 'relay-marker', { marker: 'later' });
    await eventually(() => queue.getJob(outboxJobId(marker.id)), 15_000);
    expect(await queue.getJob(outboxJobId(msg.id)), 'enqueued again by the relay').to.equal(undefined);
  });

  it('enqueues at once after commit when Redis is up, without the relay', async () => {
    const msg = await transact(env.services, (_trx, outbox) =>
      outbox.add(QUEUES.refund, 'direct', { marker: 'direct' }),
    );
    const job = await env.services.queues.get(QUEUES.refund).getJob(outboxJobId(msg.id));
    expect(job?.data).to.deep.equal({ marker: 'direct' });
    // marked in a batch a few milliseconds later, so the relay leaves it alone
    await eventually(async () => (await env.services.db('outbox').where({ id: msg.id }).first()).enqueued_at);
  });

  it('writes no job when the transaction rolls back', async () => {
    const before = await env.services.db('outbox').count<{ count: string }[]>('* as count');
    await transact(env.services, async (_trx, outbox) => {
      await outbox.add(QUEUES.refund, 'rolled-back', { marker: 'never' });
      throw new Error('abort');
    }).catch(() => undefined);
    const afterRows = await env.services.db('outbox').count<{ count: string }[]>('* as count');
    expect(afterRows[0].count).to.equal(before[0].count);
    const jobs = await env.services.queues.get(QUEUES.refund).getJobs(['waiting', 'delayed']);
    expect(jobs.map((j) => j.name)).not.to.include('rolled-back');
  });
});

describe('worker bootstrap', () => {
  let env: TestEnv;
  before(async () => {
    env = await startTestEnv();
  });
  after(async () => env.close());

  it('finishes the job in hand on SIGTERM, then exits 0', async () => {
    const worker = await env.spawn('test/fixtures/slow-pool.ts');
    const job = await env.services.queues.get(QUEUES.refund).add('slow', { ms: 1500, marker: 'graceful' });
    await worker.waitForLine((l) => l.msg === 'job started' && l.marker === 'graceful');
    const code = await worker.stop('SIGTERM');
    expect(code).to.equal(0);
    const row = await env.services.db('settings').where({ key: 'graceful' }).first();
    expect(row?.value).to.deep.equal({ done: true });
    const fresh = await env.services.queues.get(QUEUES.refund).getJob(job.id!);
    expect(await fresh!.getState()).to.equal('completed');
  });

  /** The niceness of each thread of a process (field 19 of /proc/PID/task/TID/stat). */
  const threadNiceness = (pid: number) =>
    readdirSync(`/proc/${pid}/task`).map((tid) =>
      Number(
        readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
          .replace(/^.*\) /s, '')
          .split(' ')[16],
      ),
    );

  it('runs nicer than the web, every thread of it, so that the web is served first on a shared machine', async () => {
    const worker = await env.spawn('test/fixtures/slow-pool.ts');
    const started = await worker.waitForLine((l) => l.msg === 'worker pool started');
    expect(started.nice).to.equal(POOL_NICENESS);
    const niceness = threadNiceness(worker.child.pid!);
    expect(niceness.length).to.be.above(1);
    expect(
      niceness.every((n) => n >= POOL_NICENESS),
      `threads' niceness ${niceness.join(', ')}`,
    ).to.equal(true);
    expect(os.getPriority(process.pid), 'the test process (and its in-process web) itself').to.equal(0);
    await worker.stop();
  });

  it('logs a line for a failed job, without its payload', async () => {
    const worker = await env.spawn('test/fixtures/slow-pool.ts');
    await env.services.queues.get(QUEUES.refund).add('broken', { nonsense: 'x' }, { attempts: 1 });
    const line = await worker.waitForLine((l) => l.msg === 'job failed');
    expect(line).to.include({ queue: 'refund', jobName: 'broken' });
    expect(line.err.message).to.equal('bad payload');
    expect(JSON.stringify(line)).not.to.include('nonsense');
    await worker.stop();
  });
});
