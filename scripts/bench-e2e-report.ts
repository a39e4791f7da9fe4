import { writeFileSync } from 'node:fs';
import { ALL_QUEUES } from '../shared/queues/names';
import { f0, f1 } from './bench-common';
import { OVERLOAD_TIMEOUT_MS, RECOVERY_RATE, RECOVERY_S } from './bench-e2e-load';
import type { AnswerKind, BareBaseline, OverloadResult, StepResult } from './bench-e2e-measure';

/**
 * bench:e2e's report: the lines it prints (docs/benchmarks.md#benche2e quotes them) and the JSON of
 * --json. Nothing here measures.
 */

export const say = (line: string) => process.stdout.write(`${line}\n`);

export function sayBare(b: BareBaseline): void {
  say(
    `bare Koa: ${b.postsPerS.toFixed(0)} POST/s, ${b.cpuMsPerPost.toFixed(3)} ms CPU per POST (${b.connections} connections, ${b.seconds} s; p50 ${b.p50.toFixed(1)} ms, p99 ${b.p99.toFixed(1)} ms)`,
  );
}

/** The run's first line: the stack's processes and what it runs with. */
export function sayStack(s: {
  processes: string[];
  keys: number;
  callbackDelayMs: number;
  logLevel: string;
  autovacuum: string;
  syncCommit: string;
  env: Record<string, string>;
}): void {
  say(
    `bench:e2e: ${s.processes.length} processes (${s.processes.join(', ')}), node ${process.version}, ${s.keys} API keys, sandbox callback delay ${s.callbackDelayMs} ms, LOG_LEVEL ${s.logLevel}, autovacuum ${s.autovacuum}, synchronous_commit ${s.syncCommit}${
      Object.keys(s.env).length
        ? `, ${Object.entries(s.env)
            .map(([a, b]) => `${a}=${b}`)
            .join(' ')}`
        : ''
    }`,
  );
}

/** The columns of the steps' table; `width`: that of the variant column (--compare), else none. */
export function sayTableHeader(width?: number): void {
  say(
    `\n${width ? `${'variant'.padEnd(width)}  ` : ''}  rate  created/s  webhooks/s  POST p50  POST p99  e2e p50  e2e p99   lost  dup  drain s  backlog+  CPU ms/payment  bare POSTs  busy  sustained  load`,
  );
}

/**
 * A step's row and the lines under it. `variant`: its column (--compare), padded to `width`;
 * `redisScope`: what its Redis commands were counted over (empty: a private Redis).
 */
export function sayStep(r: StepResult, o: { variant?: string; width: number; redisScope: string }): void {
  say(
    `${o.variant !== undefined ? `${o.variant.padEnd(o.width)}  ` : ''}${f0(r.rate).padStart(6)}  ${f0(r.createdPerS).padStart(9)}  ${f0(r.webhooksPerS).padStart(10)}  ${f1(r.postP50).padStart(6)}ms  ${f1(r.postP99).padStart(6)}ms  ${f0(r.e2eP50).padStart(5)}ms  ${f0(r.e2eP99).padStart(5)}ms  ${String(r.lost).padStart(5)}  ${String(r.duplicates).padStart(3)}  ${f1(r.drainS).padStart(7)}  ${String(r.backlogGrowth).padStart(8)}  ${f1(r.cpuTotalMsPerPayment).padStart(14)}  ${f1(r.cpuTotalBarePostsPerPayment ?? NaN).padStart(10)}  ${`${Math.round(r.busy * 100)}%`.padStart(4)}  ${(r.sustained ? 'yes' : 'NO').padStart(9)}  ${r.load}`,
  );
  if (r.errors) say(`        answers: ${JSON.stringify(r.statuses)}`);
  saySlowest(r, 'of POSTs');
  if (r.listenOverflows)
    say(`        listen queues overflowed: ${r.listenOverflows} SYNs dropped (clients retry 1, 3, 7 s later)`);
  sayCpu(r, 'payment');
  say(
    `        Redis commands per payment ${r.redisCommandsPerPayment.toFixed(1)}${o.redisScope}: ${r.redisTopCommands.map(([c, v]) => `${c} ${v.toFixed(1)}`).join(', ')}`,
  );
  const every = Math.max(1, Math.round(r.depths.length / 12));
  const series = ALL_QUEUES.filter((q) => r.depths.some((d) => d.depths[q] > 0)).map(
    (q) =>
      `${q} ${r.depths
        .filter((_, i) => i % every === 0)
        .map((d) => d.depths[q])
        .join(' ')}`,
  );
  say(`        queue depths every ${every} s: ${series.length ? series.join(' | ') : 'all empty'}`);
}

/** Where the slowest 1% of a step's POSTs spent their time, and the load generator's lateness. */
function saySlowest(r: StepResult, what: string): void {
  if (!r.postSlowest) return;
  const p = r.postSlowest;
  say(
    `        slowest 1% ${what} (mean ms): ${f1(p.queued)} waiting for a client connection, ${f1(p.connect)} connecting, ${f1(p.write)} writing, ${f1(p.wait)} waiting for the answer, ${f1(p.read)} reading it; the load generator's event loop late by ${f1(r.benchLoopDelayMs.p99)} ms (p99), ${f1(r.benchLoopDelayMs.max)} ms (max)`,
  );
}

/** The CPU line of a step: per process, in ms and (with the baseline) in bare POSTs. */
export function sayCpu(r: StepResult, per: string): void {
  const cpuLine = Object.entries(r.cpuMsPerPayment)
    .filter(([, v]) => v >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(
      ([name, v]) =>
        `${name} ${v.toFixed(2)}${r.cpuBarePostsPerPayment ? ` (${r.cpuBarePostsPerPayment[name].toFixed(1)})` : ''}`,
    )
    .join(', ');
  say(
    `        CPU ms per ${per}${r.cpuBarePostsPerPayment ? ' (in bare POSTs)' : ''}: ${cpuLine}; Postgres transactions per ${per} ${r.pgTransactionsPerPayment.toFixed(1)} (the bench's own samples included)`,
  );
}

/** The overload step's first line, before its load. */
export function sayOverloadStart(variant: string, rate: number, seconds: number, rateFrom: string): void {
  say(
    `\noverload${variant ? ` (${variant})` : ''}: ${f0(rate)}/s offered for ${seconds} s (${rateFrom}), open loop, requests cut after ${OVERLOAD_TIMEOUT_MS / 1000} s; then ${RECOVERY_RATE}/s for ${RECOVERY_S} s`,
  );
}

/** The overload step's answers, refusals, losses, recovery and verdict. */
export function sayOverload(r: OverloadResult, label: string): void {
  const row = (name: string, k: AnswerKind, detail = '') =>
    say(
      `        ${name.padEnd(18)} ${String(k.count).padStart(7)}  ${k.count ? `${f1(k.p99).padStart(8)} ms` : '       -   '}${detail}`,
    );
  const counts = (c: Record<string, number>) =>
    Object.entries(c)
      .map(([k, n]) => `${k} ×${n}`)
      .join(', ');
  say(`        ${'answers'.padEnd(18)} ${'count'.padStart(7)}  ${'p99'.padStart(8)}`);
  row('201 created', r.answers.created);
  row('503 refused', r.answers.refused);
  row('other', r.answers.other, r.answers.other.count ? `   (${counts(r.otherStatuses)})` : '');
  row(
    'connection errors',
    r.answers.connectionErrors,
    r.answers.connectionErrors.count ? `   (${counts(r.connectionErrorCodes)})` : '',
  );
  row(`timeouts (${OVERLOAD_TIMEOUT_MS / 1000} s)`, r.answers.timeouts);
  const all = r.answers.created.count + r.answers.refused.count + r.answers.other.count;
  say(`        ${'all answers'.padEnd(18)} ${String(all).padStart(7)}  ${f1(r.p99All).padStart(8)} ms`);
  const refused = r.answers.refused.count;
  say(
    refused === 0
      ? '        503s: none'
      : r.refusalsWithoutRetryAfter === 0 && r.refusalsWithoutCode === 0
        ? `        503s: every one of the ${refused} with Retry-After and the code service-unavailable`
        : `        503s: ${r.refusalsWithoutRetryAfter} of ${refused} without Retry-After (whole seconds), ${r.refusalsWithoutCode} without the code service-unavailable`,
  );
  say(
    `        accepted ${r.accepted.step + r.accepted.recovery} (${r.accepted.step} in the step, ${r.accepted.recovery} in the recovery): ${r.lost} lost, ${r.duplicates} duplicates, drained ${f1(r.drainS)} s after the recovery`,
  );
  say(
    `        recovery at ${r.recovery.rate}/s: POST p99 by second (ms) ${r.recovery.perSecondP99.map(f0).join(' ')}; normal: within 2 × ${f1(r.recovery.referenceP99)} = ${f1(r.recovery.bound)} ms (POST p99 of the ${r.recovery.referenceRate}/s step); answers ${counts(r.recovery.statuses)}`,
  );
  const s = r.step;
  say(
    `        the step: created ${f0(r.accepted.step / r.seconds)}/s, webhooks ${f0(s.webhooksPerS)}/s, creation → webhook p50 ${f0(s.e2eP50)} ms p99 ${f0(s.e2eP99)} ms (recovery included); CPU ${f1(s.cpuTotalMsPerPayment)} ms per accepted payment${s.cpuTotalBarePostsPerPayment === undefined ? '' : ` (${f1(s.cpuTotalBarePostsPerPayment)} bare POSTs)`} over the step, its recovery and drain, refusals included; machine ${Math.round(s.busy * 100)}% busy`,
  );
  saySlowest(s, "of the step's POSTs");
  say(
    r.recovery.backAfterS === null
      ? `        not back within ${RECOVERY_S} s`
      : `        back to normal latency after ${r.recovery.backAfterS} s`,
  );
  say(`overload${label}: ${r.pass ? 'PASS' : `FAIL (${r.reasons.join(', ')})`}`);
}

/** The last lines: the max sustained rate of each variant. */
export function sayMaxSustained(variants: { label: string }[], maxSustained: (label: string) => number): void {
  say('');
  for (const v of variants) say(`max sustained${v.label ? ` (${v.label})` : ''}: ${maxSustained(v.label)}/s`);
}

/** --json: every figure of the run. */
export function writeJson(file: string, run: object): void {
  writeFileSync(file, JSON.stringify(run, null, 2));
}
