import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { startReceiver, type Receiver } from '../helpers/webhooks';
import { aMerchant, callbackBody, mobilePayment, sendCallback, waitForStatus } from '../helpers/money';
import { freePort } from '../../scripts/lib/ports';
import { randomBytes, randomUUID } from 'node:crypto';
import { eventually, startProcess, type RunningProcess } from '../../scripts/lib/processes';
import { outboxMessage } from '../../shared/queues/outbox';
import { QUEUES } from '../../shared/queues/names';

/**
 * One payment is one trace (docs/operating.md#traces): the service's processes run with traces on, as an
 * operator turns them on (OTEL_EXPORTER_OTLP_ENDPOINT), and export to a small OTLP/HTTP receiver
 * of this file's (JSON: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json). A mobile-money payment
 * goes to `succeeded` and its webhook is delivered on the second attempt; its trace then holds
 * the spans of the web, provider-push, the sandbox provider, callback-reconciler and
 * webhook-sender, each hop a descendant of the one before, and no span holds the client's phone
 * number, the merchant's secret or API key.
 */

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
  events?: { name: string; attributes?: { key: string; value: Record<string, unknown> }[] }[];
  links?: { traceId: string; spanId: string }[];
}

/** A span as received, with its process and its attributes as plain values. */
interface Got {
  process: string;
  service: string;
  span: OtlpSpan;
  attrs: Record<string, unknown>;
}

const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;

/** A trace context of a trace of the test's own: [traceparent, trace id, span id]. */
function aTraceparent(): [string, string, string] {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return [`00-${traceId}-${spanId}-01`, traceId, spanId];
}

/** An OTLP attribute's value ({stringValue: …}, {intValue: …}, …) as a plain one. */
const plain = (v: Record<string, unknown>) => Object.values(v)[0];
const attributes = (list: OtlpSpan['attributes'] = []) => Object.fromEntries(list.map((a) => [a.key, plain(a.value)]));

/** A collector on loopback: OTLP/HTTP, JSON encoding, traces only. */
async function startCollector() {
  const spans: Got[] = [];
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      if (req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      const text = raw.toString('utf8');
      bodies.push(text);
      for (const rs of JSON.parse(text).resourceSpans ?? []) {
        const resource = attributes(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const span of ss.spans ?? []) {
            spans.push({
              process: String(resource['svc_payments.process']),
              service: String(resource['service.name']),
              span,
              attrs: attributes(span.attributes),
            });
          }
        }
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    bodies,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

describe('traces: one payment, one trace across the processes (OpenTelemetry)', function () {
  this.timeout(90_000);
  let env: TestEnv;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let rx: Receiver;
  const processes: Record<string, RunningProcess> = {};
  const PHONE = '243990000001';
  /** what turns traces on in a spawned process, as an operator would (and where the web is) */
  let tracedEnv: Record<string, string>;

  before(async () => {
    collector = await startCollector();
    rx = await startReceiver();
    const [sandboxPort, webPort] = await Promise.all([freePort(), freePort()]);
    const webUrl = `http://127.0.0.1:${webPort}`;
    env = await startTestEnv({
      SANDBOX_PROVIDER_PORT: String(sandboxPort),
      SANDBOX_PROVIDER_URL: `http://127.0.0.1:${sandboxPort}`,
      SANDBOX_CALLBACK_DELAY_MS: '200',
      WEBHOOK_RETRY_DELAYS_MS: '300,400,500,600,700,800,900,1000',
    });
    // every process of the payment's path, traced as an operator turns traces on; the web too,
    // as a process of its own (the test's in-process app only creates the merchant)
    tracedEnv = {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      BASE_URL: webUrl,
    };
    processes.web = await env.spawn('api/server.ts', { ...tracedEnv, PORT: String(webPort) });
    processes.sandbox = await env.spawn('shared/providers/sandbox/server.ts', tracedEnv);
    for (const pool of ['provider-push', 'callback-reconciler', 'webhook-sender', 'outbox-relay']) {
      processes[pool] = await env.spawn(`workers/${pool}/index.ts`, tracedEnv);
    }
  });
  after(async () => {
    await env?.close();
    await rx?.close();
    await collector?.close();
  });

  it('links POST /v1/payments, the push, the provider, its callback, the transition and each webhook attempt', async () => {
    const shop = await aMerchant(env);
    const hook = await env.admin('POST', '/admin/webhooks', {
      merchant_id: shop.merchant.id,
      url: `${rx.url}/hooks`,
      events: ['payment.succeeded'],
      environment: 'test',
    });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(201);
    // the merchant's endpoint fails the first attempt: the delivery's two attempts are both in the trace
    rx.on('/hooks', (_req, n) => ({ status: n === 1 ? 500 : 200 }));

    const web = env.client(shop.credential, webUrlOf(processes.web));
    const created = await web.post('/v1/payments', mobilePayment(PHONE));
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    await waitForStatus(web, created.body.id, 'succeeded');
    await rx.waitFor('/hooks', 2);

    const request = await eventually(async () =>
      collector.spans.find(
        (s) =>
          s.process === 'web' &&
          s.span.kind === SERVER &&
          s.attrs['http.request.method'] === 'POST' &&
          s.attrs['url.path'] === '/v1/payments',
      ),
    );
    const traceId = request.span.traceId;
    const inTrace = () => collector.spans.filter((s) => s.span.traceId === traceId);
    // the last hop (the second attempt's request to the merchant) has been exported
    const isAttempt = (s: Got) =>
      s.process === 'webhook-sender' && s.span.kind === CLIENT && s.attrs['http.request.method'] === 'POST';
    // each process exports on its own schedule: wait until both attempts and the job spans above them are in
    const chainComplete = () => {
      const all = inTrace();
      const ids = new Map(all.map((s) => [s.span.spanId, s]));
      const reachesJob = (s: Got) => {
        for (let p = ids.get(s.span.parentSpanId ?? ''); p; p = ids.get(p.span.parentSpanId ?? '')) {
          if (p.process === 'webhook-sender' && p.span.kind === CONSUMER) return true;
        }
        return false;
      };
      const attempts = all.filter(isAttempt);
      return attempts.length >= 2 && attempts.every(reachesJob);
    };
    await eventually(async () => chainComplete(), 15_000).catch(() => undefined);
    const spans = inTrace();
    const byId = new Map(spans.map((s) => [s.span.spanId, s]));
    const ancestors = (s: Got): Got[] => {
      const out: Got[] = [];
      for (let p = byId.get(s.span.parentSpanId ?? ''); p; p = byId.get(p.span.parentSpanId ?? '')) out.push(p);
      return out;
    };
    const isAncestor = (a: Got, b: Got) => ancestors(b).includes(a);
    const one = (what: string, pred: (s: Got) => boolean) => {
      const found = spans.filter(pred);
      expect(
        found,
        `${what} in the payment's trace; its processes: ${[...new Set(spans.map((s) => `${s.process}:${s.span.name}`))].join(', ')}`,
      ).to.not.be.empty;
      return found;
    };

    // one trace, five processes
    const processNames = new Set(spans.map((s) => s.process));
    expect([...processNames]).to.include.members([
      'web',
      'provider-push',
      'sandbox-provider',
      'callback-reconciler',
      'webhook-sender',
    ]);
    expect(new Set(spans.map((s) => s.service)).size, 'each process its own service.name').to.be.at.least(5);

    // in order: each hop descends from the one before
    const [push] = one('the provider-push job', (s) => s.process === 'provider-push' && s.span.kind === CONSUMER);
    const [send] = one('the send', (s) => s.process === 'provider-push' && s.span.name === 'send payment');
    const [providerCall] = one(
      'the provider call',
      (s) =>
        s.process === 'provider-push' &&
        s.span.kind === CLIENT &&
        String(s.attrs['url.full']).includes('/vodacom/v1/collections'),
    );
    const [atProvider] = one(
      "the provider's side of the push",
      (s) => s.process === 'sandbox-provider' && s.span.kind === SERVER,
    );
    const [callback] = one(
      'the callback request',
      (s) => s.process === 'web' && s.span.kind === SERVER && String(s.attrs['url.path']).startsWith('/callbacks/'),
    );
    const [reconcile] = one(
      "the reconciler's job",
      (s) => s.process === 'callback-reconciler' && s.span.kind === CONSUMER,
    );
    const [transition] = one(
      'the transition',
      (s) => s.process === 'callback-reconciler' && s.span.name === 'apply-callback',
    );
    const deliveries = one(
      "the webhook-sender's jobs",
      (s) => s.process === 'webhook-sender' && s.span.kind === CONSUMER,
    );
    const attempts = one('the attempts', isAttempt);

    expect(isAncestor(request, push), 'request → push job').to.equal(true);
    expect(isAncestor(push, send), 'push job → send').to.equal(true);
    expect(send.attrs).to.include({ 'svc_payments.operation.id': created.body.id, 'svc_payments.send.result': 'sent' });
    expect(isAncestor(send, providerCall), 'send → provider call').to.equal(true);
    // the connector call's own span: which connector, operator and kind; no number, token or body
    const [connectorCall] = one(
      'the connector call',
      (s) => s.process === 'provider-push' && s.span.name === 'provider payment',
    );
    expect(connectorCall.attrs).to.deep.equal({
      'svc_payments.connector': 'sandbox',
      'svc_payments.operator': 'vodacom',
      'svc_payments.operation.kind': 'payment',
    });
    expect(
      isAncestor(send, connectorCall) && isAncestor(connectorCall, providerCall),
      'send → connector call → HTTP',
    ).to.equal(true);
    expect(isAncestor(providerCall, atProvider), 'provider call → provider').to.equal(true);
    expect(isAncestor(atProvider, callback), 'provider → callback').to.equal(true);
    expect(isAncestor(callback, reconcile), 'callback → reconciler job').to.equal(true);
    expect(isAncestor(reconcile, transition), 'reconciler job → transition').to.equal(true);
    expect(transition.attrs).to.include({
      'svc_payments.callback.outcome': 'applied',
      'svc_payments.operation.id': created.body.id,
      'svc_payments.callback.status': 'succeeded',
    });
    for (const d of deliveries) expect(isAncestor(transition, d), 'transition → delivery').to.equal(true);
    expect(attempts.length).to.equal(2);
    for (const a of attempts) {
      expect(
        deliveries.some((d) => isAncestor(d, a)),
        'delivery → attempt',
      ).to.equal(true);
      expect(a.attrs['url.full']).to.equal(`${rx.url}/hooks`);
    }
    expect(attempts.map((a) => a.attrs['http.response.status_code']).sort()).to.deep.equal([200, 500]);
    // the outbox row carried the request's context into the job
    const outboxRow = await env.services.db('outbox').whereRaw(`payload->>'paymentId' = ?`, [created.body.id]).first();
    expect(outboxRow.traceparent).to.match(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    // what a span must never hold, anywhere in what was exported (every span of every process)
    const everything = collector.bodies.join('\n');
    const secrets = {
      phone: PHONE,
      'phone without its country code': PHONE.slice(3),
      secret: shop.credential.secret,
      'API key': shop.credential.api_key,
      'webhook secret': shop.credential.webhook_secret,
    };
    for (const [what, value] of Object.entries(secrets)) {
      expect(value, what).to.be.a('string').with.length.greaterThan(6);
      expect(everything.includes(value), `no span holds the ${what}`).to.equal(false);
    }
    // and the receiver's answer (a body) is not recorded either
    expect(everything).to.not.include('243812345678');

    // every log line of a traced process names the span it was written in
    const reconciled = await processes['callback-reconciler'].waitForLine(
      (l) => l?.msg === 'callback processed' && l.objectId === created.body.id,
    );
    expect(reconciled.trace_id).to.equal(traceId);
    expect(reconciled.span_id).to.match(/^[0-9a-f]{16}$/);
  });

  it('traces a refund the same way: its request, its job and provider call, its callback and transition', async () => {
    processes.refund ??= await env.spawn('workers/refund/index.ts', tracedEnv);
    const shop = await aMerchant(env);
    const web = env.client(shop.credential, webUrlOf(processes.web));
    const paid = await web.post('/v1/payments', mobilePayment(PHONE));
    await waitForStatus(web, paid.body.id, 'succeeded');
    const asked = await web.post(`/v1/payments/${paid.body.id}/refund`, {});
    expect(asked.status, JSON.stringify(asked.body)).to.equal(201);
    const refundId = asked.body.id;

    const request = await eventually(
      async () =>
        collector.spans.find(
          (s) =>
            s.process === 'web' &&
            s.span.kind === SERVER &&
            s.attrs['url.path'] === `/v1/payments/${paid.body.id}/refund`,
        ),
      20_000,
    );
    const transition = await eventually(
      async () =>
        collector.spans.find(
          (s) =>
            s.span.traceId === request.span.traceId &&
            s.span.name === 'apply-callback' &&
            s.attrs['svc_payments.operation.id'] === refundId,
        ),
      20_000,
    );
    // each process exports on its own schedule: wait until the chain reaches the trace's root
    const chainOf = () => {
      const byId = new Map(
        collector.spans.filter((s) => s.span.traceId === request.span.traceId).map((s) => [s.span.spanId, s]),
      );
      const chain: Got[] = [];
      for (let p: Got | undefined = transition; p; p = byId.get(p.span.parentSpanId ?? '')) chain.unshift(p);
      return chain;
    };
    const chain = await eventually(async () => {
      const found = chainOf();
      return found[0].span.parentSpanId ? undefined : found;
    }, 20_000).catch(() => chainOf());
    expect(chain.map((p) => `${p.process}: ${p.span.name}`)).to.deep.equal([
      'web: POST',
      'web: add refund.send-refund',
      'refund: process refund',
      'refund: send refund',
      'refund: provider refund',
      'refund: POST',
      'sandbox-provider: POST',
      'sandbox-provider: POST',
      'web: POST',
      'web: add callback-reconciler.apply-callback',
      'callback-reconciler: process callback-reconciler',
      'callback-reconciler: apply-callback',
    ]);
    expect(transition.attrs).to.include({
      'svc_payments.operation.kind': 'refund',
      'svc_payments.callback.outcome': 'applied',
    });
  });

  it('joins a callback that carries no trace context (a live provider) to the trace its payment was created in', async () => {
    const shop = await aMerchant(env);
    const web = env.client(shop.credential, webUrlOf(processes.web));
    // the sandbox never answers this number: the only callback is the one sent here, as a live provider would (no traceparent)
    const created = await web.post('/v1/payments', mobilePayment('243990000004'));
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const id = created.body.id;
    // the payment keeps the trace it was created in: its request's
    const { traceparent } = await env.services.db('payments').where({ id }).first('traceparent');
    const traceId = String(traceparent).split('-')[1];
    const request = await eventually(async () =>
      collector.spans.find(
        (s) =>
          s.process === 'web' &&
          s.span.kind === SERVER &&
          s.attrs['url.path'] === '/v1/payments' &&
          s.span.traceId === traceId,
      ),
    );
    expect(request.attrs['http.request.method']).to.equal('POST');
    const sent = await sendCallback(
      webUrlOf(processes.web),
      'vodacom-sandbox',
      callbackBody({ external_id: id, status: 'succeeded', provider_ref: 'LIVE-1' }),
    );
    expect(sent.status).to.equal(200);
    await waitForStatus(web, id, 'succeeded');
    const transition = await eventually(
      async () =>
        collector.spans.find(
          (s) =>
            s.process === 'callback-reconciler' &&
            s.span.name === 'apply-callback' &&
            s.attrs['svc_payments.operation.id'] === id,
        ),
      20_000,
    );
    expect(transition.span.traceId, 'the callback joined the payment trace').to.equal(traceId);
    expect(transition.attrs).to.include({ 'svc_payments.callback.outcome': 'applied' });
  });

  it("continues each element's own trace in a batch job, and a row's trace when the relay enqueues it", async () => {
    const shop = await aMerchant(env);
    const web = env.client(shop.credential, webUrlOf(processes.web));
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await web.post('/v1/payments', mobilePayment(PHONE));
      expect(res.status).to.equal(201);
      ids.push(res.body.id);
    }
    for (const id of ids) await waitForStatus(web, id, 'succeeded');

    // two pushes published together travel as one batch job (shared/queues/batch.ts), each
    // element with the trace of the row it came from (running again, each finds its payment sent)
    const [tp1, trace1, span1] = aTraceparent();
    const [tp2, trace2, span2] = aTraceparent();
    await env.services.outbox.publish([
      outboxMessage(QUEUES.providerPush, 'push', { paymentId: ids[0] }, 0, tp1),
      outboxMessage(QUEUES.providerPush, 'push', { paymentId: ids[1] }, 0, tp2),
    ]);
    const element = (traceId: string) =>
      collector.spans.find(
        (s) =>
          s.process === 'provider-push' &&
          s.span.traceId === traceId &&
          s.span.name === 'process provider-push element',
      );
    const [e1, e2] = await eventually(
      async () => element(trace1) && element(trace2) && [element(trace1)!, element(trace2)!],
      15_000,
    );
    expect([e1.span.parentSpanId, e2.span.parentSpanId]).to.deep.equal([span1, span2]);
    expect(e1.span.kind).to.equal(CONSUMER);
    // each linked to the batch's own job, a trace of its own
    const batch = collector.spans.find(
      (s) => s.process === 'provider-push' && s.span.kind === CONSUMER && s.span.spanId === e1.span.links?.[0]?.spanId,
    );
    expect(batch, 'the batch job, linked').to.exist;
    expect(e2.span.links?.[0]?.spanId).to.equal(batch!.span.spanId);
    expect(batch!.span.traceId).to.not.be.oneOf([trace1, trace2]);

    // a committed row whose immediate enqueue was missed: the relay enqueues it in its trace
    const [tp3, trace3, span3] = aTraceparent();
    await env.services.db('outbox').insert({
      id: randomUUID(),
      queue: QUEUES.providerPush,
      job_name: 'push',
      payload: JSON.stringify({ paymentId: ids[0] }),
      delay_ms: 0,
      traceparent: tp3,
      created_at: new Date(Date.now() - 5000),
    });
    const relayed = await eventually(
      async () =>
        collector.spans.find(
          (s) => s.process === 'outbox-relay' && s.span.traceId === trace3 && s.span.kind === PRODUCER,
        ),
      15_000,
    );
    expect(relayed.span.parentSpanId).to.equal(span3);
    const job = await eventually(
      async () =>
        collector.spans.find(
          (s) => s.process === 'provider-push' && s.span.traceId === trace3 && s.span.kind === CONSUMER,
        ),
      15_000,
    );
    expect(job.span.parentSpanId).to.equal(relayed.span.spanId);
  });

  it('loads none of the SDK and writes no trace_id while no OTEL_* variable turns traces on', async function () {
    // three processes that each load the web app and the worker bootstrap: slow on a busy machine
    this.timeout(240_000);
    const run = async (extra: Record<string, string>) => {
      const p = startProcess('test/fixtures/tracing-state.ts', { ...env.processEnv, ...extra });
      try {
        const state = await p.waitForLine((l) => l?.msg === 'tracing state', 60_000);
        // the logger's line may reach the pipe after the state line (written straight to stdout)
        const line = await p.waitForLine((l) => l?.msg === 'a line', 10_000);
        return { state, line };
      } finally {
        await p.kill();
      }
    };
    const off = await run({});
    expect(off.state.on).to.equal(false);
    // prom-client loads the API (it reads the active span for exemplars); nothing else of OpenTelemetry loads
    expect(off.state.packages.filter((p: string) => p !== '@opentelemetry/api')).to.deep.equal([]);
    expect(off.line).to.exist.and.not.have.property('trace_id');
    expect((await run({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url })).state.on).to.equal(
      false,
    );

    const on = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
    expect(on.state.on).to.equal(true);
    expect(on.state.packages).to.include.members([
      '@opentelemetry/sdk-node',
      '@opentelemetry/instrumentation-pg',
      '@opentelemetry/instrumentation-ioredis',
      '@opentelemetry/instrumentation-http',
    ]);
  });
});

/** The URL a spawned web listens on (its 'web listening' line). */
function webUrlOf(p: RunningProcess): string {
  const line = p.lines.find((l) => l?.msg === 'web listening');
  return `http://127.0.0.1:${line.port}`;
}
