import type * as OTel from '@opentelemetry/api';
import type { Telemetry } from 'bullmq';

/**
 * A payment's trace across its hops (docs/operating.md#traces): the context of the span that wrote an outbox row
 * travels in the row (its W3C `traceparent`) and in the job's data (bullmq-otel, and a batch's
 * elements each with their own); a worker continues it.
 *
 * Off by default, and then free: every helper returns at its first line, and neither
 * @opentelemetry/api nor bullmq-otel is loaded. The SDK (./sdk.ts) calls `tracingStarted` once:
 * this module's one variable is that process-wide switch, as the API's own global provider is.
 */

interface Tracing {
  api: typeof OTel;
  tracer: OTel.Tracer;
  flush: () => Promise<void>;
  telemetry?: Telemetry;
}

let tracing: Tracing | null = null;

/** Called once by the SDK (./sdk.ts) when traces are on; returns what turns them off again (tests). */
export function tracingStarted(api: typeof OTel, flush: () => Promise<void>): () => void {
  const started: Tracing = { api, tracer: api.trace.getTracer('svc-payments'), flush };
  tracing = started;
  return () => {
    if (tracing === started) tracing = null;
  };
}

export function tracingOn(): boolean {
  return tracing !== null;
}

/** Exports the spans still buffered (a process that stops: shared/context.ts close). */
export async function flushTraces(): Promise<void> {
  await tracing?.flush().catch(() => undefined);
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The W3C traceparent of the active span (null: traces off or no span), as an outbox row and a
 * job keep it; built from the span context, whichever propagators OTEL_PROPAGATORS chose for HTTP.
 */
export function traceparentNow(): string | null {
  if (!tracing) return null;
  const sc = tracing.api.trace.getSpanContext(tracing.api.context.active());
  if (!sc || !tracing.api.isSpanContextValid(sc)) return null;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The context a stored traceparent names (undefined: off, absent or malformed). */
function contextOf(t: Tracing, traceparent: unknown): OTel.Context | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const m = TRACEPARENT.exec(traceparent);
  if (!m || m[1] === 'ff' || /^0+$/.test(m[2]) || /^0+$/.test(m[3])) return undefined;
  return t.api.trace.setSpanContext(t.api.ROOT_CONTEXT, {
    traceId: m[2],
    spanId: m[3],
    traceFlags: parseInt(m[4], 16) & 1,
    isRemote: true,
  });
}

/** Runs `fn` as a continuation of the stored `traceparent` (as it is when there is none, or traces are off). */
export function withTraceparent<T>(traceparent: unknown, fn: () => T): T {
  if (!tracing) return fn();
  const ctx = contextOf(tracing, traceparent);
  return ctx ? tracing.api.context.with(ctx, fn) : fn();
}

/** BullMQ's `telemetry` option (bullmq-otel) when traces are on; undefined (BullMQ traces nothing) when off. */
export function jobTelemetry(): Telemetry | undefined {
  if (!tracing) return undefined;
  if (!tracing.telemetry) {
    // loaded only when traces are on
    const { BullMQOtel } = require('bullmq-otel') as typeof import('bullmq-otel');
    tracing.telemetry = new BullMQOtel({ tracerName: 'bullmq' });
  }
  return tracing.telemetry;
}

/**
 * A job's own trace context, for the jobs added together in one call (Queue.addBulk takes the
 * caller's context for all of them otherwise): bullmq-otel's metadata for `traceparent`.
 */
export function jobTraceOptions(traceparent: unknown): { telemetry: { metadata: string } } | undefined {
  if (!tracing) return undefined;
  const ctx = contextOf(tracing, traceparent);
  const telemetry = ctx && jobTelemetry();
  return telemetry ? { telemetry: { metadata: telemetry.contextManager.getMetadata(ctx) } } : undefined;
}

/** Attributes a span of ours may carry: ids, statuses, counts; never a phone number, a secret or a body. */
export type SpanFacts = Record<string, string | number | boolean | undefined>;

export interface SpanOptions {
  /** the span's parent, a stored traceparent (default: the active span) */
  parent?: unknown;
  /** CONSUMER for a piece of work taken from a queue; INTERNAL otherwise */
  consumer?: boolean;
  attributes?: SpanFacts;
}

/**
 * Runs `fn` in a span of its own: a child of `parent` (linked to the span active here, e.g. a
 * batch's job), or of the active span; `fn` may add facts learnt on the way. A rejection is
 * recorded on the span. With traces off, `fn` runs as it is.
 */
export function inSpan<T>(
  name: string,
  opts: SpanOptions,
  fn: (facts: (f: SpanFacts) => void) => Promise<T>,
): Promise<T> {
  return tracing ? traced(tracing, name, opts, fn) : fn(ignore);
}

async function traced<T>(
  t: Tracing,
  name: string,
  opts: SpanOptions,
  fn: (facts: (f: SpanFacts) => void) => Promise<T>,
): Promise<T> {
  const { api, tracer } = t;
  const active = api.context.active();
  const parent = opts.parent === undefined ? undefined : contextOf(t, opts.parent);
  const linked = parent ? api.trace.getSpanContext(active) : undefined;
  const span = tracer.startSpan(
    name,
    {
      kind: opts.consumer ? api.SpanKind.CONSUMER : api.SpanKind.INTERNAL,
      attributes: defined(opts.attributes),
      links: linked && api.isSpanContextValid(linked) ? [{ context: linked }] : undefined,
    },
    parent ?? active,
  );
  try {
    return await api.context.with(api.trace.setSpan(parent ?? active, span), () =>
      fn((f) => span.setAttributes(defined(f) ?? {})),
    );
  } catch (err) {
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: (err as Error)?.name });
    span.recordException(err as Error);
    throw err;
  } finally {
    span.end();
  }
}

const ignore = () => undefined;

function defined(facts: SpanFacts | undefined): OTel.Attributes | undefined {
  if (!facts) return undefined;
  const out: OTel.Attributes = {};
  for (const [k, v] of Object.entries(facts)) if (v !== undefined) out[k] = v;
  return out;
}

const NO_FIELDS: Readonly<Record<string, string>> = Object.freeze({});

/** The log fields of the active span (trace_id, span_id); only called when traces are on (shared/logger.ts). */
export function traceFields(): Readonly<Record<string, string>> {
  if (!tracing) return NO_FIELDS;
  const sc = tracing.api.trace.getSpanContext(tracing.api.context.active());
  return sc && tracing.api.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : NO_FIELDS;
}
