import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The shipped alert rules (ops/prometheus/alerts.yml) pass `promtool check rules`, their unit
 * tests (alerts.test.yml) pass `promtool test rules`, and the scrape configuration passes
 * `promtool check config`. promtool comes with Debian's `prometheus` package, which .ci/run
 * installs; without it these checks are skipped, saying so. The rules' shape is checked always.
 */

const OPS = path.join(__dirname, '..', '..', 'ops', 'prometheus');
const rules = readFileSync(path.join(OPS, 'alerts.yml'), 'utf8');

function promtool(args: string[], cwd = OPS) {
  const r = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
  const error: NodeJS.ErrnoException | undefined = r.error;
  return { missing: error?.code === 'ENOENT', status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** Each alert's text, from its `- alert:` line to the next. */
const alerts = rules
  .split(/\n(?= *- alert: )/)
  .slice(1)
  .map((block) => ({ name: /- alert: (\S+)/.exec(block)![1], block }));

describe('alert rules (ops/prometheus)', () => {
  it('has 8 to 14 alerts, each with a severity, a summary and a runbook line', () => {
    expect(alerts.length).to.be.within(8, 14);
    for (const a of alerts) {
      expect(a.block, a.name).to.match(/\n\s+severity: (page|ticket)\n/);
      expect(a.block, a.name).to.match(/\n\s+summary: "[^"\n]+"\n/);
      expect(a.block, a.name).to.match(/\n\s+runbook: "[^"\n]+"\n/);
    }
  });

  it('covers what on-call needs: provider errors, queue wait, open past window, attention, dead webhooks, ledger, a process down, shedding, reconciliation', () => {
    const names = alerts.map((a) => a.name);
    for (const name of [
      'ProviderErrorRateHigh',
      'QueueWaitAboveBudget',
      'OperationOpenPastWindow',
      'AttentionItemsWaiting',
      'WebhooksDeadLettering',
      'LedgerImbalance',
      'ProcessDown',
      'OverloadShedding',
      'ReconciliationNeedsOperator',
    ]) {
      expect(names).to.include(name);
    }
  });

  it('has unit tests for at least 4 alerts, each firing and staying quiet', () => {
    const tests = readFileSync(path.join(OPS, 'alerts.test.yml'), 'utf8');
    const tested = new Set([...tests.matchAll(/alertname: (\S+)\n\s+exp_alerts:\n\s+- exp_labels/g)].map((m) => m[1]));
    const quiet = new Set([...tests.matchAll(/alertname: (\S+)\n\s+exp_alerts: \[\]/g)].map((m) => m[1]));
    expect(tested.size).to.be.at.least(4);
    for (const name of tested) expect(quiet.has(name), `${name} is never shown quiet`).to.equal(true);
  });

  describe('promtool', () => {
    before(function () {
      if (promtool(['--version']).missing) {
        console.log(
          "      promtool not found: skipping promtool check/test (install Debian's `prometheus` package; .ci/run does)",
        );
        this.skip();
      }
    });

    it('check rules: the rules file is valid', () => {
      const r = promtool(['check', 'rules', 'alerts.yml']);
      expect(r.status, r.output).to.equal(0);
      expect(r.output).to.match(/SUCCESS: (8|9|10|11|12|13|14) rules found/);
    });

    it('test rules: every unit test of alerts.test.yml passes', () => {
      const r = promtool(['test', 'rules', 'alerts.test.yml']);
      expect(r.status, r.output).to.equal(0);
      expect(r.output).to.include('SUCCESS');
    });

    it('test rules fails when an alert does not fire as expected (the check can fail)', () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'ops-rules-'));
      try {
        copyFileSync(path.join(OPS, 'alerts.yml'), path.join(dir, 'alerts.yml'));
        const tests = readFileSync(path.join(OPS, 'alerts.test.yml'), 'utf8').replace('queue: payout', 'queue: refund');
        writeFileSync(path.join(dir, 'alerts.test.yml'), tests);
        const r = promtool(['test', 'rules', 'alerts.test.yml'], dir);
        expect(r.status, r.output).not.to.equal(0);
        expect(r.output).to.include('QueueStuck');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('check config: the scrape configuration is valid (with an admin-token file beside it)', () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'ops-config-'));
      try {
        for (const f of ['prometheus.yml', 'alerts.yml']) copyFileSync(path.join(OPS, f), path.join(dir, f));
        writeFileSync(path.join(dir, 'admin-token'), 'an-admin-token');
        const r = promtool(['check', 'config', 'prometheus.yml'], dir);
        expect(r.status, r.output).to.equal(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
