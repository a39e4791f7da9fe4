import type { Clock } from '../clock';
import { raw } from 'objection';
import type { Db } from '../db/knex';
import { ProviderHealthBucket } from '../db/models';
import type { Logger } from '../logger';
import { ProviderError } from '../providers/errors';
import { connectorLabel, timeProviderCall } from '../metrics/providerCalls';
import { inSpan } from '../tracing/spans';
import type { ProviderObjectKind } from '../providers/types';
import type { ProviderEndpoint } from '../providers/connector';
import { OPERATORS, type Environment, type Operator } from '../vocabulary';
import type { Direction } from '../vocabulary';

/**
 * Operator availability (GET /v1/availability) from every provider call the kernel makes (a send,
 * an ask), through `observe`. A call fails when it timed out, could not reach the provider or got
 * an answer worth retrying (5xx and the like); any answer, even a refusal, succeeds, slow when it
 * took AVAILABILITY_SLOW_MS or more. Counts are summed in memory and written every second, one row
 * per operator, direction, environment and 10-second bucket, so the hot path adds no round trip;
 * a process that dies loses at most a second of counts (figures about providers, never money).
 */

export const DIRECTION_OF: Record<ProviderObjectKind, Direction> = {
  payment: 'collection',
  refund: 'refund',
  payout: 'payout',
  card_payment: 'collection',
};

export const BUCKET_MS = 10_000;
const FLUSH_MS = 1000;

/** One provider_health row's counts, by its column names. */
interface Counts {
  operator: Operator;
  direction: Direction;
  environment: Environment;
  bucket: Date;
  calls: number;
  failures: number;
  slow: number;
  latency_ms_sum: number;
}

export class ProviderHealth {
  private unflushed = new Map<string, Counts>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly slowMs: number,
    private readonly log: Logger,
  ) {}

  /** Runs one provider call for an operation of `kind`, counting its outcome; the call's result or error passes through. */
  async observe<T>(
    provider: ProviderEndpoint,
    kind: ProviderObjectKind,
    operator: Operator | null,
    call: () => Promise<T>,
  ): Promise<T> {
    const started = performance.now();
    let failed = false;
    try {
      // a span per connector call (its HTTP spans beneath it): the connector, operator and kind; never a number, token or body
      const attributes = {
        'svc_payments.connector': connectorLabel(provider),
        'svc_payments.operator': operator ?? undefined,
        'svc_payments.operation.kind': kind,
      };
      return await inSpan(`provider ${kind}`, { attributes }, () => timeProviderCall(provider, operator, kind, call)()); // provider_call_duration_seconds (shared/metrics)
    } catch (err) {
      failed = !(err instanceof ProviderError) || err.retryable;
      throw err;
    } finally {
      this.count(provider, operator, kind, failed, performance.now() - started);
    }
  }

  private count(
    provider: ProviderEndpoint,
    operator: Operator | null,
    kind: ProviderObjectKind,
    failed: boolean,
    latencyMs: number,
  ): void {
    // only mobile-money operators have an availability row (a card acquirer has no operator)
    if (!operator || !OPERATORS.includes(operator)) return;
    const bucket = Math.floor(this.clock.now() / BUCKET_MS) * BUCKET_MS;
    const direction = DIRECTION_OF[kind];
    const key = `${operator}/${direction}/${provider.environment}/${bucket}`;
    let c = this.unflushed.get(key);
    if (!c) {
      c = {
        operator,
        direction,
        environment: provider.environment,
        bucket: new Date(bucket),
        calls: 0,
        failures: 0,
        slow: 0,
        latency_ms_sum: 0,
      };
      this.unflushed.set(key, c);
    }
    c.calls++;
    if (failed) c.failures++;
    else if (latencyMs >= this.slowMs) c.slow++;
    c.latency_ms_sum += Math.round(latencyMs);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, FLUSH_MS).unref();
  }

  /** Writes the counts gathered so far (also at close). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.unflushed.size === 0) return;
      const rows = [...this.unflushed.values()];
      this.unflushed = new Map();
      try {
        await ProviderHealthBucket.query(this.db)
          .insert(rows)
          .onConflict(['operator', 'direction', 'environment', 'bucket'])
          .merge({
            calls: raw('provider_health.calls + excluded.calls'),
            failures: raw('provider_health.failures + excluded.failures'),
            slow: raw('provider_health.slow + excluded.slow'),
            latency_ms_sum: raw('provider_health.latency_ms_sum + excluded.latency_ms_sum'),
          });
      } catch (err) {
        this.log.warn(
          { err: { message: (err as Error).message }, rows: rows.length },
          'provider health counts not written',
        );
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}

/** Buckets older than this go (the availability window is at most a day). */
export const HEALTH_KEEP_MS = 26 * 3600 * 1000;

export async function pruneProviderHealth(db: Db, now: number): Promise<number> {
  return ProviderHealthBucket.query(db)
    .where('bucket', '<', new Date(now - HEALTH_KEEP_MS))
    .delete();
}
