import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startTestEnv, ADMIN_TOKEN, type TestEnv } from '../helpers/env';
import { aMerchant, aPayment, startSandbox, waitForStatus } from '../helpers/money';
import { startReceiver, type Receiver } from '../helpers/webhooks';
import { eventually } from '../../scripts/lib/processes';
import { freePort } from '../../scripts/lib/ports';

/**
 * The metrics the alert rules (ops/prometheus/alerts.yml) and the dashboard
 * (ops/grafana/dashboard.json) name are metrics the service really serves: the web app and real
 * pool processes (provider-push, callback-reconciler, webhook-sender) with their metrics ports
 * are scraped over HTTP after a payment's journey to `succeeded` and its webhook, and every name
 * in a rule or a panel must be in what they served (or be Prometheus's own `up`).
 */

const ROOT = path.join(__dirname, '..', '..');
/** Series Prometheus makes itself for each target, not served by any process. */
const MADE_BY_PROMETHEUS = new Set(['up']);

const PROMQL_WORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'offset',
  'bool',
  'inf',
  'nan',
]);

/** The metric names a PromQL expression reads (functions, keywords, labels, strings and ranges left out). */
function metricNamesOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names: string[] = [];
  for (const m of bare.matchAll(/[A-Za-z_][A-Za-z0-9_:]*/g)) {
    const next = bare.slice(m.index + m[0].length).trimStart()[0];
    if (next === '(' || PROMQL_WORDS.has(m[0].toLowerCase())) continue;
    names.push(m[0]);
  }
  return names;
}

/** The `expr` of every rule of a rules file (a one-line value, or a `|` / `>` block). */
function ruleExpressions(yaml: string): string[] {
  const lines = yaml.split('\n');
  const exprs: string[] = [];
  lines.forEach((line, i) => {
    const m = /^(\s*)expr:\s*(.*)$/.exec(line);
    if (!m) return;
    if (!/^[|>][-+]?\s*$/.test(m[2])) return void exprs.push(m[2].replace(/^(['"])(.*)\1$/, '$2'));
    const block: string[] = [];
    for (let j = i + 1; j < lines.length && (lines[j].trim() === '' || lines[j].search(/\S/) > m[1].length); j++)
      block.push(lines[j]);
    exprs.push(block.join('\n'));
  });
  return exprs;
}

/** The names a Prometheus text exposition serves: each TYPE line's, with a histogram's and a summary's series. */
function servedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m;
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    else if (type === 'summary') for (const s of ['', '_sum', '_count']) names.add(name + s);
    else names.add(name);
  }
  return names;
}

/** The value of the first sample line starting with `series` (`name{labels}`), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics named by the alert rules and the dashboard', function () {
  this.timeout(60_000);
  let env: TestEnv;
  let rx: Receiver;
  const ports = { push: 0, reconciler: 0, sender: 0 };
  const scrapeWeb = async () => {
    const res = await fetch(`${env.baseUrl}/metrics`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.status).to.equal(200);
    return res.text();
  };
  const scrapePool = async (port: number) => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).to.equal(200);
    return res.text();
  };
  let web = '';
  let push = '';
  let reconciler = '';
  let sender = '';
  let payment: any;
  let merchantId = '';

  before(async () => {
    env = await startTestEnv({ SANDBOX_CALLBACK_DELAY_MS: '150', RATE_LIMIT_PER_MINUTE: '100000' });
    const { url } = await startSandbox(env);
    rx = await startReceiver();
    for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
    const pools = await Promise.all([
      env.spawn('workers/provider-push/index.ts', {
        SANDBOX_PROVIDER_URL: url,
        PROVIDER_PUSH_METRICS_PORT: String(ports.push),
      }),
      env.spawn('workers/callback-reconciler/index.ts', {
        SANDBOX_PROVIDER_URL: url,
        CALLBACK_RECONCILER_METRICS_PORT: String(ports.reconciler),
      }),
      env.spawn('workers/webhook-sender/index.ts', { WEBHOOK_SENDER_METRICS_PORT: String(ports.sender) }),
    ]);
    await Promise.all(pools.map((p) => p.waitForLine((l) => l?.msg === 'metrics listening')));
    // the first scrape is where the web starts counting what reaches a final status
    await scrapeWeb();
    const shop = await aMerchant(env);
    merchantId = shop.merchant.id;
    const hook = await env.admin('POST', '/admin/webhooks', {
      merchant_id: merchantId,
      url: `${rx.url}/hook`,
      events: ['payment.*'],
      environment: 'test',
    });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(201);
    payment = await aPayment(shop.client, { phone: '243990000001' });
    await waitForStatus(shop.client, payment.id, 'succeeded');
    await rx.waitFor('/hook', 1);
    web = await eventually(async () => {
      const text = await scrapeWeb();
      const finalized = sample(
        text,
        'operation_time_to_final_seconds_count{kind="payment",operator="vodacom",status="succeeded"}',
      );
      return finalized === 1 && sample(text, 'webhook_deliveries_finished_total{outcome="succeeded"}') === 1
        ? text
        : undefined;
    }, 10_000);
    push = await eventually(async () => {
      const text = await scrapePool(ports.push);
      return sample(text, 'job_duration_seconds_count{queue="provider-push",job_name="push",outcome="completed"}')
        ? text
        : undefined;
    }, 10_000);
    reconciler = await scrapePool(ports.reconciler);
    sender = await eventually(async () => {
      const text = await scrapePool(ports.sender);
      return sample(text, 'job_duration_seconds_count{queue="webhook-sender",job_name="deliver",outcome="completed"}')
        ? text
        : undefined;
    }, 10_000);
  });
  after(async () => {
    await env?.close();
    await rx?.close();
  });

  it('serves what happened: the payment finalized and its webhook delivered (web), its push job and provider call (provider-push), its callback job (callback-reconciler), its delivery job (webhook-sender)', () => {
    expect(
      sample(web, 'operation_time_to_final_seconds_count{kind="payment",operator="vodacom",status="succeeded"}'),
    ).to.equal(1);
    expect(sample(web, 'operation_oldest_open_age_seconds{kind="payment"}')).to.equal(0);
    expect(sample(web, 'ledger_check_problems')).to.equal(0);
    expect(sample(push, 'job_wait_seconds_count{queue="provider-push"}')).to.be.at.least(1);
    expect(
      sample(
        push,
        'provider_call_duration_seconds_count{connector="sandbox",operator="vodacom",kind="payment",environment="test",outcome="answered"}',
      ),
    ).to.equal(1);
    expect(sample(reconciler, 'job_wait_seconds_count{queue="callback-reconciler"}')).to.be.at.least(1);
    expect(reconciler).to.include('process_cpu_seconds_total');
    expect(sample(web, 'webhook_deliveries_finished_total{outcome="succeeded"}')).to.equal(1);
    expect(sample(web, 'webhook_deliveries_pending')).to.equal(0);
    expect(sample(sender, 'job_wait_seconds_count{queue="webhook-sender"}')).to.be.at.least(1);
  });

  it('labels with closed sets only: no id, phone number or merchant text in any label', () => {
    for (const text of [web, push, reconciler, sender]) {
      for (const secret of [payment.id, merchantId, payment.reference, '243990000001', '990000001'])
        expect(text).not.to.include(secret);
    }
  });

  it('has every metric of the alert rules in what the processes serve', () => {
    const served = new Set([
      ...[web, push, reconciler, sender].flatMap((t) => [...servedNames(t)]),
      ...MADE_BY_PROMETHEUS,
    ]);
    const exprs = ruleExpressions(readFileSync(path.join(ROOT, 'ops/prometheus/alerts.yml'), 'utf8'));
    expect(exprs.length).to.be.within(8, 14);
    const named = new Set(exprs.flatMap(metricNamesOf));
    expect(named.size).to.be.greaterThan(8);
    expect(
      [...named].filter((n) => !served.has(n)),
      'named by alerts.yml, served by no process',
    ).to.deep.equal([]);
  });

  it('has every metric of the dashboard in what the processes serve, and the dashboard parses', () => {
    const served = new Set([
      ...[web, push, reconciler, sender].flatMap((t) => [...servedNames(t)]),
      ...MADE_BY_PROMETHEUS,
    ]);
    const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'ops/grafana/dashboard.json'), 'utf8'));
    const exprs: string[] = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr));
    expect(exprs.length).to.be.greaterThan(10);
    const named = new Set(exprs.flatMap(metricNamesOf));
    expect(
      [...named].filter((n) => !served.has(n)),
      'named by dashboard.json, served by no process',
    ).to.deep.equal([]);
  });

  it('finds names the way Prometheus reads them (the check can fail)', () => {
    expect(
      metricNamesOf('sum by (queue, le) (rate(job_wait_seconds_bucket{queue=~"a|b"}[5m])) > 2 and on (queue) up == 0'),
    ).to.deep.equal(['job_wait_seconds_bucket', 'up']);
    expect(metricNamesOf('time() - max(ledger_check_last_run_timestamp_seconds) > 1800')).to.deep.equal([
      'ledger_check_last_run_timestamp_seconds',
    ]);
    expect(
      ruleExpressions(
        '  - alert: A\n    expr: |\n      rate(x_total[5m])\n      > 0\n    for: 1m\n  - alert: B\n    expr: up == 0\n',
      ),
    ).to.deep.equal(['      rate(x_total[5m])\n      > 0', 'up == 0']);
    expect(servedNames('# TYPE a_seconds histogram\n# TYPE b_total counter\n')).to.deep.equal(
      new Set(['a_seconds_bucket', 'a_seconds_sum', 'a_seconds_count', 'b_total']),
    );
  });
});
