import pg from 'pg';
import { readFileSync } from 'node:fs';
const cpu = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').slice(readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' '); return (+f[11] + +f[12]) * 10; };
(async () => {
  const c = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1/postgres' });
  await c.connect();
  await c.query('create temp table if not exists t0 (id serial, v text)');
  await c.query('create table if not exists zz_commit (id serial primary key, v text)');
  const pid = (await c.query('select pg_backend_pid() p')).rows[0].p;
  for (const sc of ['on', 'off', 'on', 'off']) {
    await c.query(`set synchronous_commit = ${sc}`);
    const n = 3000; const c0 = cpu(pid); const m0 = process.cpuUsage(); const t0 = Date.now();
    for (let i = 0; i < n; i++) await c.query({ name: 'ins', text: 'insert into zz_commit (v) values ($1)', values: ['x' + i] });
    const dt = Date.now() - t0; const m = process.cpuUsage(m0);
    console.log(sc, 'wall/op', (dt / n).toFixed(3), 'ms; backend cpu/op', ((cpu(pid) - c0) / n).toFixed(3), 'ms; node cpu/op', ((m.user + m.system) / 1000 / n).toFixed(3));
  }
  await c.query('drop table zz_commit'); await c.end();
})();
