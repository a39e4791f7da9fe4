import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseProcfile } from '../../scripts/start';
import { COPIES_PER_BLOCK, METRICS_PORT_OFFSETS, metricsPortFor } from '../../shared/metrics/ports';

/**
 * The Grafana dashboard (ops/grafana/dashboard.json) parses and shows what on-call reads, and the
 * pools' metrics ports, the Procfile and the scrape configuration agree. That every metric the
 * dashboard names is served is test/integration/metrics-names.test.ts.
 */

const ROOT = path.join(__dirname, '..', '..');

describe('Grafana dashboard (ops/grafana)', () => {
  const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'ops/grafana/dashboard.json'), 'utf8'));
  const panels: any[] = dashboard.panels.filter((p: any) => p.type !== 'row');

  it('parses, and every panel queries Prometheus through the datasource variable', () => {
    expect(dashboard.title).to.be.a('string');
    expect(dashboard.templating.list.map((v: any) => v.name)).to.include('datasource');
    expect(new Set(dashboard.panels.map((p: any) => p.id)).size).to.equal(dashboard.panels.length);
    for (const p of panels) {
      expect(p.datasource, p.title).to.deep.equal({ type: 'prometheus', uid: '${datasource}' });
      expect(p.targets.length, p.title).to.be.greaterThan(0);
      for (const t of p.targets) expect(t.expr, p.title).to.be.a('string').and.not.equal('');
      expect(p.gridPos.x + p.gridPos.w, p.title).to.be.at.most(24);
    }
  });

  it('shows traffic, success rate per operator, creation-to-final latency, queues, webhooks and overload', () => {
    const exprs = panels.flatMap((p) => p.targets.map((t: any) => t.expr)).join('\n');
    expect(exprs).to.include('http_requests_total');
    expect(exprs).to.match(
      /sum by \(operator\) .*operation_time_to_final_seconds_count\{kind=~"payment\|card_payment",status="succeeded"\}/,
    );
    expect(exprs).to.include('operation_time_to_final_seconds_bucket');
    expect(exprs).to.include('queue_jobs');
    expect(exprs).to.include('job_wait_seconds_bucket');
    expect(exprs).to.include('webhook_deliveries_finished_total');
    expect(exprs).to.include('webhook_endpoints_breaker_open');
    expect(exprs).to.include('http_requests_shed_total');
  });

  it('shows the reconciliation: unresolved items per connector and category, the wallet difference', () => {
    const exprs = panels.flatMap((p) => p.targets.map((t: any) => t.expr)).join('\n');
    expect(exprs).to.include('max by (connector, category) (reconciliation_items{category!="matched"})');
    expect(exprs).to.include('max by (connector, currency) (provider_wallet_difference)');
  });
});

describe('pool metrics ports (shared/metrics/ports.ts)', () => {
  const pools = parseProcfile(readFileSync(path.join(ROOT, 'Procfile'), 'utf8')).filter((l) =>
    /workers\/[^/]+\/index\.js/.test(l.command),
  );
  const scrape = readFileSync(path.join(ROOT, 'ops/prometheus/prometheus.yml'), 'utf8');

  it('gives every worker pool of the Procfile a block of ports, none overlapping', () => {
    expect(pools.length).to.be.greaterThan(5);
    expect(Object.keys(METRICS_PORT_OFFSETS).sort()).to.deep.equal(pools.map((p) => p.name).sort());
    const offsets = Object.values(METRICS_PORT_OFFSETS).sort((a, b) => a - b);
    for (let i = 1; i < offsets.length; i++) expect(offsets[i] - offsets[i - 1]).to.be.at.least(COPIES_PER_BLOCK);
  });

  it('is what prometheus.yml scrapes with METRICS_PORT_BASE=9400, each target labelled with its process', () => {
    for (const [pool, offset] of Object.entries(METRICS_PORT_OFFSETS)) {
      expect(scrape, pool).to.include(
        `- targets: ['127.0.0.1:${9400 + offset}']\n        labels: { process: ${pool} }`,
      );
    }
  });

  it('is off unless configured; <POOL>_METRICS_PORT overrides the base; bad values stop the pool', () => {
    expect(metricsPortFor('provider-push', {})).to.equal(null);
    expect(metricsPortFor('provider-push', { METRICS_PORT_BASE: '0' })).to.equal(null);
    expect(metricsPortFor('provider-push', { METRICS_PORT_BASE: '9400' })).to.equal(9420);
    expect(metricsPortFor('provider-push', { METRICS_PORT_BASE: '9400', PROVIDER_PUSH_METRICS_PORT: '9999' })).to.equal(
      9999,
    );
    expect(metricsPortFor('provider-push', { METRICS_PORT_BASE: '9400', PROVIDER_PUSH_METRICS_PORT: '0' })).to.equal(
      null,
    );
    expect(() => metricsPortFor('provider-push', { METRICS_PORT_BASE: 'x' })).to.throw(/METRICS_PORT_BASE/);
    expect(() => metricsPortFor('new-pool', { METRICS_PORT_BASE: '9400' })).to.throw(/METRICS_PORT_OFFSETS/);
  });
});
