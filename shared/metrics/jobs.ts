import type { Job, Worker } from 'bullmq';
import { Histogram } from 'prom-client';
import { processRegistry } from './registry';

/**
 * What a pool's BullMQ worker does with its jobs, from the worker's own events:
 * - job_wait_seconds{queue}: from a job's creation (plus the delay it was added with) to the
 *   start of its first run; the queue's wait, which its budget is about. Later runs (a retry's
 *   backoff, a postponed delivery) are not waits for a worker and are not counted.
 * - job_duration_seconds{queue, job_name, outcome}: each run, by how it ended: `completed`,
 *   `retried` (it failed and BullMQ will run it again) or `failed` (for good: attempts spent or
 *   refused). Its `_count` counts runs by outcome. A run that postpones itself (a webhook
 *   endpoint's slot) ends in neither and is not counted.
 * Job names are our own constants (deliver, send-payout…); anything else in Redis is `other`.
 */
export const jobWait = new Histogram({
  name: 'job_wait_seconds',
  help: "Time from a job's creation (and initial delay) to the start of its first run",
  labelNames: ['queue'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [processRegistry],
});

export const jobDuration = new Histogram({
  name: 'job_duration_seconds',
  help: 'Time a job run took, by queue, job name and outcome (completed, retried, failed)',
  labelNames: ['queue', 'job_name', 'outcome'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [processRegistry],
});

const JOB_NAME = /^[a-z][a-z0-9-]{0,39}$/;
const jobName = (job: Job | undefined) => (job && JOB_NAME.test(job.name) ? job.name : 'other');
const ranFor = (job: Job) => Math.max(0, Date.now() - (job.processedOn ?? Date.now())) / 1000;

/** Records the waits and runs of a pool's worker on `queue`. */
export function recordJobs(worker: Worker, queue: string): void {
  worker.on('active', (job) => {
    if (job.attemptsMade > 0 || job.attemptsStarted > 1 || !job.processedOn) return;
    jobWait.observe({ queue }, Math.max(0, job.processedOn - job.timestamp - (job.opts.delay ?? 0)) / 1000);
  });
  worker.on('completed', (job) =>
    jobDuration.observe({ queue, job_name: jobName(job), outcome: 'completed' }, ranFor(job)),
  );
  worker.on('failed', (job) => {
    // BullMQ sets finishedOn only when the job fails for good
    if (!job) return jobDuration.observe({ queue, job_name: 'other', outcome: 'failed' }, 0);
    jobDuration.observe({ queue, job_name: jobName(job), outcome: job.finishedOn ? 'failed' : 'retried' }, ranFor(job));
  });
}
