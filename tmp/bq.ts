import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import { execSync } from 'node:child_process';
const redisPid = Number(execSync("pgrep -f 'redis-server 127.0.0.1:6379'").toString().trim().split('\n')[0]);
const cpu = (pid: number) => { const st = readFileSync(`/proc/${pid}/stat`, 'utf8'); const f = st.slice(st.lastIndexOf(')') + 2).split(' '); return (+f[11] + +f[12]) * 10; };
async function run(label: string, jobOpts: any, queueOpts: any, n = 6000) {
  const conn = new Redis({ maxRetriesPerRequest: null, db: 7 });
  await conn.flushdb();
  const prefix = '{bq}';
  const q = new Queue('t', { connection: conn, prefix, ...queueOpts });
  let done = 0; let resolve!: () => void; const all = new Promise<void>((r) => (resolve = r));
  const w = new Worker('t', async () => { if (++done === n) resolve(); }, { connection: conn, prefix, concurrency: 16 });
  await w.waitUntilReady();
  const r0 = cpu(redisPid); const m0 = process.cpuUsage(); const t0 = Date.now();
  // open loop: 1000/s
  for (let i = 0; i < n; i++) {
    void q.add('j', { paymentId: `pay_${i}` }, { jobId: `ob-${i}`, ...(jobOpts.dedup ? { deduplication: { id: `d${i}` } } : {}), ...jobOpts.opts });
    if (i % 10 === 9) await new Promise((r) => setTimeout(r, 10));
  }
  await all;
  const m = process.cpuUsage(m0);
  console.log(label.padEnd(40), 'node ms/job', ((m.user + m.system) / 1000 / n).toFixed(3), 'redis ms/job', ((cpu(redisPid) - r0) / n).toFixed(3), 'wall', Date.now() - t0);
  await w.close(); await q.close(); await conn.quit();
}
(async () => {
  const base = { removeOnComplete: { age: 3600, count: 10000 }, removeOnFail: { age: 7 * 24 * 3600 }, attempts: 8, backoff: { type: 'exponential', delay: 1000 } };
  for (let rep = 0; rep < 2; rep++) {
    await run('current (dedup, keep 10000)', { dedup: true, opts: base }, {});
    await run('removeOnComplete true', { dedup: true, opts: { ...base, removeOnComplete: true } }, {});
    await run('no dedup', { dedup: false, opts: base }, {});
    await run('events maxLen 0 + removeOnComplete', { dedup: true, opts: { ...base, removeOnComplete: true } }, { streams: { events: { maxLen: 0 } } });
  }
})();
