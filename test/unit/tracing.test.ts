import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import * as api from '@opentelemetry/api';
import { SamplingDecision } from '@opentelemetry/sdk-trace';
import { processNameOf, tracingWanted } from '../../shared/tracing/env';
import { QuietRoots, samplerFromEnv, scrubAttributes, scrubUrl, UNTRACED_PATHS } from '../../shared/tracing/sdk';
import { inSpan, traceparentNow, tracingStarted, withTraceparent } from '../../shared/tracing/spans';
import { createLogger } from '../../shared/logger';

const ROOT = path.join(__dirname, '..', '..');

/** A context manager for synchronous code: enough to make a span active around a log call. */
class StackContextManager implements api.ContextManager {
  private stack: api.Context[] = [];
  active = () => this.stack[this.stack.length - 1] ?? api.ROOT_CONTEXT;
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: api.Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    this.stack.push(ctx);
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.stack.pop();
    }
  }
  bind<T>(_ctx: api.Context, target: T): T {
    return target;
  }
  enable() {
    return this;
  }
  disable() {
    this.stack = [];
    return this;
  }
}

// 16 digits in a row: a card number to the log mask, which must leave a trace id alone
const TRACE_ID = 'ab1234567890123456cdef0123456789';
const SPAN_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${SPAN_ID}-01`;

describe('tracing', () => {
  it('is off unless a standard variable turns it on', () => {
    expect(tracingWanted({})).to.equal(false);
    expect(tracingWanted({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).to.equal(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).to.equal(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).to.equal(true);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: 'console' })).to.equal(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' })).to.equal(false);
    expect(
      tracingWanted({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
    ).to.equal(false);
    expect(tracingWanted({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).to.equal(false);
  });

  it('names each Procfile process after its line, from its compiled or TypeScript entry (PROCESS_NAME wins)', () => {
    const lines = readFileSync(path.join(ROOT, 'Procfile'), 'utf8')
      .split('\n')
      .filter((l) => /^[a-z-]+:/.test(l));
    expect(lines.length).to.be.greaterThan(10);
    for (const line of lines) {
      const [name, command] = [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()];
      const entry = command.split(/\s+/).find((w) => w.startsWith('build/'))!;
      expect(processNameOf(path.join(ROOT, entry), ROOT), entry).to.equal(name);
      const source = entry.replace(/^build\//, '').replace(/\.js$/, '.ts');
      expect(processNameOf(source, ROOT), source).to.equal(name);
    }
    expect(processNameOf('workers/refund/index.ts', ROOT, { PROCESS_NAME: 'refund-2' })).to.equal('refund-2');
  });

  it('keeps no query string, user info or full phone number in a URL, and masks every other string', () => {
    expect(scrubUrl('https://user:pw@merchant.example:8443/hooks/243990000001?token=s3cret#x')).to.equal(
      'https://merchant.example:8443/hooks/*****0001',
    );
    const attrs: api.Attributes = {
      'url.full': 'http://127.0.0.1:3000/v1/phone-numbers/%2B243%2081%20234%205678?x=1',
      'url.path': '/v1/phone-numbers/0812345678',
      'url.query': 'phone=243990000001',
      'exception.message': 'provider refused 243990000001 with key svc_test_abcdefghijklmnop',
      'bullmq.job.bulk.names': ['push', 'call 243990000001'],
      'http.response.status_code': 200,
      'db.query.text': 'select * from payments where id = $1',
    };
    scrubAttributes(attrs);
    expect(attrs).to.deep.equal({
      'url.full': 'http://127.0.0.1:3000/v1/phone-numbers/*****5678',
      'url.path': '/v1/phone-numbers/*****5678',
      'exception.message': 'provider refused 243*****0001 with key svc_test_[redacted]',
      'bullmq.job.bulk.names': ['push', 'call 243*****0001'],
      'http.response.status_code': 200,
      'db.query.text': 'select * from payments where id = $1',
    });
  });

  it('traces no probe, scrape or Bull Board poll', () => {
    for (const url of ['/health/ready', '/health/live', '/metrics', '/admin/queues', '/admin/queues/api/queues?x=1'])
      expect(UNTRACED_PATHS.test(url), url).to.equal(true);
    for (const url of ['/v1/payments', '/callbacks/vodacom-sandbox', '/admin/merchants', '/metricsx'])
      expect(UNTRACED_PATHS.test(url), url).to.equal(false);
  });

  it("keeps no trace of BullMQ's housekeeping roots, and samples as OTEL_TRACES_SAMPLER says", () => {
    const quiet = new QuietRoots(samplerFromEnv({}));
    const child = api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId: TRACE_ID,
      spanId: SPAN_ID,
      traceFlags: 1,
      isRemote: true,
    });
    const decide = (ctx: api.Context, kind: api.SpanKind) =>
      quiet.shouldSample(ctx, TRACE_ID, 'x', kind, {}, []).decision;
    expect(decide(api.ROOT_CONTEXT, api.SpanKind.INTERNAL)).to.equal(SamplingDecision.NOT_RECORD);
    expect(decide(api.ROOT_CONTEXT, api.SpanKind.SERVER)).to.equal(SamplingDecision.RECORD_AND_SAMPLED);
    expect(decide(api.ROOT_CONTEXT, api.SpanKind.CONSUMER)).to.equal(SamplingDecision.RECORD_AND_SAMPLED);
    expect(decide(child, api.SpanKind.INTERNAL)).to.equal(SamplingDecision.RECORD_AND_SAMPLED);
    expect(
      samplerFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).toString(),
    ).to.match(/ParentBased.*TraceIdRatioBased\{0\.25\}/);
    expect(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'always_off' }).toString()).to.equal('AlwaysOffSampler');
    expect(samplerFromEnv({}).toString()).to.match(/ParentBased\{root=AlwaysOnSampler/);
  });

  describe('in a process with traces on', () => {
    const manager = new StackContextManager();
    let stop: () => void;
    before(() => {
      api.context.setGlobalContextManager(manager);
      stop = tracingStarted(api, async () => undefined);
    });
    after(() => {
      stop();
      api.context.disable();
    });

    function capture(traced: boolean, fn: () => void): any[] {
      const lines: any[] = [];
      const memory = new Writable({
        write(chunk, _enc, cb) {
          lines.push(JSON.parse(chunk.toString()));
          cb();
        },
      });
      const log = createLogger('info', 'test', memory, traced);
      withTraceparent(TRACEPARENT, () => {
        log.info({ phone: '243990000001' }, 'inside');
        fn();
      });
      log.info('outside');
      return lines;
    }

    it('writes the active span on every log line (unmasked), and nothing outside a span', () => {
      const [inside, outside] = capture(true, () => undefined);
      expect(inside).to.include({ msg: 'inside', trace_id: TRACE_ID, span_id: SPAN_ID, phone: '243*****0001' });
      expect(outside).to.not.have.property('trace_id');
      const [untraced] = capture(false, () => undefined);
      expect(untraced).to.not.have.property('trace_id');
    });

    it("names the active span's context as a W3C traceparent, and continues a stored one", () => {
      expect(withTraceparent(TRACEPARENT, traceparentNow)).to.equal(TRACEPARENT);
      expect(traceparentNow()).to.equal(null);
      // a malformed or absent context is no reason to refuse the work: it runs as it is
      expect(withTraceparent('00-zz-11-01', traceparentNow)).to.equal(null);
      expect(withTraceparent(`00-${'0'.repeat(32)}-${SPAN_ID}-01`, traceparentNow)).to.equal(null);
      expect(withTraceparent(undefined, () => 7)).to.equal(7);
    });

    it('runs work in a span of its own (here the no-op tracer: no SDK), and rethrows its failure', async () => {
      expect(await inSpan('x', { parent: TRACEPARENT }, async (facts) => (facts({ a: 1 }), 'done'))).to.equal('done');
      let failed: unknown;
      await inSpan('x', {}, async () => {
        throw new Error('nope');
      }).catch((e) => (failed = e));
      expect((failed as Error).message).to.equal('nope');
    });
  });
});
