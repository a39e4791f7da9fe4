import path from 'node:path';
import * as api from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  SamplingDecision,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SamplingResult,
  type Span,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import { maskPath, maskText } from '../logger';
import { processNameOf } from './env';
import { tracingStarted } from './spans';

/**
 * The OpenTelemetry SDK of one process (traces only), loaded by ./register.ts only when traces
 * are on, before pg, ioredis and http are (or their instrumentations would patch nothing). The
 * standard OTEL_* variables configure it (exporter, OTLP protocol, sampler, resource, OTEL_BSP_*).
 *
 * What a span may hold (docs/operating.md#traces): never a secret, a full phone number, card data or a body.
 * - http: no bodies and no headers are recorded (none is configured); a URL keeps no query string
 *   and no user info, and a path segment that reads as a phone number keeps its last 4 digits;
 * - pg: the statement's text with its placeholders, never its parameters;
 * - ioredis: the command's name only (BullMQ's scripts take job data as arguments);
 * - and before export, every string of every span, event and link (exception messages, a job's
 *   result) is masked as a log line is (shared/logger.ts maskText): the last guard.
 */

const ROOT = path.resolve(__dirname, '..', '..');

/** A root span of kind INTERNAL is BullMQ's housekeeping (an empty poll, a stalled-jobs check): not a trace worth keeping. */
export class QuietRoots implements Sampler {
  constructor(private readonly inner: Sampler) {}

  shouldSample(
    context: api.Context,
    traceId: string,
    name: string,
    kind: api.SpanKind,
    attributes: api.Attributes,
    links: api.Link[],
  ): SamplingResult {
    if (kind === api.SpanKind.INTERNAL && !api.trace.getSpanContext(context))
      return { decision: SamplingDecision.NOT_RECORD };
    return this.inner.shouldSample(context, traceId, name, kind, attributes, links);
  }

  toString(): string {
    return `QuietRoots{${this.inner.toString()}}`;
  }
}

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, as the specification names them. */
export function samplerFromEnv(env: Record<string, string | undefined>): Sampler {
  const ratio = () => {
    const r = Number(env.OTEL_TRACES_SAMPLER_ARG ?? '1');
    return Number.isFinite(r) && r >= 0 && r <= 1 ? r : 1;
  };
  switch ((env.OTEL_TRACES_SAMPLER ?? '').trim()) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio());
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

const number = (env: Record<string, string | undefined>, name: string): number | undefined => {
  const n = Number(env[name]);
  return env[name] && Number.isFinite(n) && n >= 0 ? n : undefined;
};

/** The exporters OTEL_TRACES_EXPORTER names (otlp by default), each behind its processor. */
function exportingProcessors(env: Record<string, string | undefined>): SpanProcessor[] {
  const names = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const processors: SpanProcessor[] = [];
  for (const name of names.length ? names : ['otlp']) {
    if (name === 'console') {
      processors.push(new SimpleSpanProcessor({ exporter: new ConsoleSpanExporter() }));
    } else if (name !== 'otlp') {
      process.stderr.write(`tracing: OTEL_TRACES_EXPORTER=${name} is not supported here (otlp, console); ignored\n`);
    } else {
      // an empty variable (a copied .env.example) counts as unset
      const protocol = (
        env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ||
        env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() ||
        'http/protobuf'
      ).trim();
      if (protocol !== 'http/json' && protocol !== 'http/protobuf') {
        process.stderr.write(
          `tracing: OTLP protocol ${protocol} is not supported here (http/protobuf, http/json); using http/protobuf\n`,
        );
      }
      processors.push(
        new BatchSpanProcessor({
          exporter: protocol === 'http/json' ? new OtlpJsonExporter() : new OtlpProtobufExporter(),
          scheduledDelayMillis: number(env, 'OTEL_BSP_SCHEDULE_DELAY'),
          maxQueueSize: number(env, 'OTEL_BSP_MAX_QUEUE_SIZE'),
          maxExportBatchSize: number(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
          exportTimeoutMillis: number(env, 'OTEL_BSP_EXPORT_TIMEOUT'),
        }),
      );
    }
  }
  return processors;
}

/** A URL as a span may keep it: no user info, no query string, phone-like path segments masked. */
export function scrubUrl(raw: string): string {
  try {
    const u = new URL(raw);
    return `${u.protocol}//${u.host}${maskPath(u.pathname)}`;
  } catch {
    return maskPath(raw.split('?')[0]);
  }
}

const PATH_ATTRIBUTES = new Set(['url.path', 'http.target', 'http.route']);
const URL_ATTRIBUTES = new Set(['url.full', 'http.url']);

/** Scrubs an attribute map in place. */
export function scrubAttributes(attributes: api.Attributes): void {
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined) continue;
    if (key === 'url.query') delete attributes[key];
    else if (typeof value === 'string' && URL_ATTRIBUTES.has(key)) attributes[key] = scrubUrl(value);
    else if (typeof value === 'string' && PATH_ATTRIBUTES.has(key)) attributes[key] = maskPath(value.split('?')[0]);
    else if (typeof value === 'string') attributes[key] = maskText(value);
    else if (Array.isArray(value))
      attributes[key] = value.map((v) => (typeof v === 'string' ? maskText(v) : v)) as api.AttributeValue;
  }
}

/** Masks every span before it ends, so that no exporter ever sees what it masks. */
const scrubber: SpanProcessor = {
  onStart: () => undefined,
  onEnding(span: Span) {
    scrubAttributes(span.attributes);
    for (const event of span.events) if (event.attributes) scrubAttributes(event.attributes);
    for (const link of span.links) if (link.attributes) scrubAttributes(link.attributes);
    const name = maskText(span.name);
    if (name !== span.name) span.updateName(name);
  },
  onEnd: () => undefined,
  forceFlush: async () => undefined,
  shutdown: async () => undefined,
};

/** Requests that are not a payment's journey: probes, scrapes, and Bull Board's polling. */
export const UNTRACED_PATHS = /^\/(health\/|metrics(\/|\?|$)|admin\/queues(\/|\?|$))/;

/** Starts the SDK; returns false (and the process runs untraced) if it could not. */
export function startTracing(env: Record<string, string | undefined> = process.env): boolean {
  try {
    const name = processNameOf(process.argv[1], ROOT, env);
    const processors = exportingProcessors(env);
    if (processors.length === 0) return false;
    const sdk = new NodeSDK({
      // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) take precedence
      resource: defaultResource().merge(
        resourceFromAttributes({
          'service.name': `svc-payments-${name}`,
          'service.namespace': 'svc-payments',
          'svc_payments.process': name,
        }),
      ),
      instrumentations: [
        // headers are recorded only when listed (none are), bodies never
        new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.test(req.url ?? '') }),
        new PgInstrumentation({
          requireParentSpan: true,
          enhancedDatabaseReporting: false,
          ignoreConnectSpans: true,
          addSqlCommenterCommentToQueries: false,
        }),
        new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
      ],
      spanProcessors: [scrubber, ...processors],
      sampler: new QuietRoots(samplerFromEnv(env)),
      // traces only: metrics are Prometheus's, logs are pino's
      metricReaders: [],
      logRecordProcessors: [],
    });
    sdk.start();
    tracingStarted(api, async () => {
      await Promise.all(processors.map((p) => p.forceFlush()));
    });
    return true;
  } catch (err) {
    process.stderr.write(`tracing: not started (${(err as Error).message}); running without traces\n`);
    return false;
  }
}
