import { expect } from 'chai';
import { SPEC_WEBHOOK_DELAYS_S, loadConfig } from '../../shared/config';
import { patternMatches, patternProblem, subscribes, SUBSCRIBABLE_EVENT_TYPES } from '../../shared/events/patterns';
import { afterAttempt, breakerState, isSuccess, MAX_ATTEMPTS } from '../../shared/webhooks/rules';
import { saturatedWaitMs } from '../../shared/webhooks/semaphore';

const SPEC_MS = SPEC_WEBHOOK_DELAYS_S.map((s) => s * 1000);

describe('webhook delivery rules', () => {
  describe('schedule (docs/decisions.md#webhooks)', () => {
    it('sends attempt n+1 after the n-th delay of the spec (1 s, 5 s, 30 s, 5 min, 30 min, 2 h, 6 h)', () => {
      const expected = [1_000, 5_000, 30_000, 300_000, 1_800_000, 7_200_000, 21_600_000];
      for (let n = 1; n <= 7; n++) {
        expect(afterAttempt(n, false, SPEC_MS)).to.deep.equal({ status: 'pending', retryInMs: expected[n - 1] });
      }
    });

    it('marks the delivery dead after attempt 8 fails, and succeeded on any success', () => {
      expect(MAX_ATTEMPTS).to.equal(8);
      expect(afterAttempt(8, false, SPEC_MS)).to.deep.equal({ status: 'dead' });
      for (let n = 1; n <= 8; n++) expect(afterAttempt(n, true, SPEC_MS)).to.deep.equal({ status: 'succeeded' });
    });

    it('refuses attempt numbers outside 1..8', () => {
      for (const n of [0, 9, 1.5, -1]) expect(() => afterAttempt(n, false, SPEC_MS)).to.throw(RangeError);
    });

    it('takes the delays from configuration; production refuses a shortened schedule and a non-spec timeout or pause', () => {
      const base = { NODE_ENV: 'test', ADMIN_API_TOKEN: 'x'.repeat(20) };
      expect(loadConfig(base).webhookRetryDelaysMs).to.deep.equal(SPEC_MS);
      expect(loadConfig({ ...base, WEBHOOK_RETRY_DELAYS_MS: '1,2,3,4,5,6,7,8' }).webhookRetryDelaysMs).to.deep.equal([
        1, 2, 3, 4, 5, 6, 7, 8,
      ]);
      const prod = {
        NODE_ENV: 'production',
        ADMIN_API_TOKEN: 'y'.repeat(32),
        SECRETS_KEY: `k:${Buffer.alloc(32, 7).toString('base64')}`,
        SANDBOX_CALLBACK_SECRET: 'z'.repeat(32),
        CARD_CALLBACK_SECRET: 'c'.repeat(32),
        CARD_VAULT_API_KEY: 'v'.repeat(32),
      };
      expect(loadConfig(prod).webhooks).to.include({ timeoutMs: 10_000, breakerPauseMs: 3_600_000 });
      expect(() => loadConfig({ ...prod, WEBHOOK_RETRY_DELAYS_MS: '1,2,3,4,5,6,7,8' })).to.throw(/shorten/);
      expect(() => loadConfig({ ...prod, WEBHOOK_TIMEOUT_MS: '1000' })).to.throw(/WEBHOOK_TIMEOUT_MS/);
      expect(() => loadConfig({ ...prod, WEBHOOK_BREAKER_PAUSE_MS: '1000' })).to.throw(/WEBHOOK_BREAKER_PAUSE_MS/);
    });
  });

  it('succeeds on any 2xx only', () => {
    for (const code of [200, 201, 202, 204, 299]) expect(isSuccess(code)).to.equal(true);
    for (const code of [null, 100, 199, 300, 301, 302, 304, 400, 404, 410, 500, 503])
      expect(isSuccess(code)).to.equal(false);
  });

  it('derives the breaker state: closed, open during the pause, half-open after it', () => {
    const now = 1_000_000;
    expect(breakerState(null, now)).to.equal('closed');
    expect(breakerState(new Date(now + 1), now)).to.equal('open');
    expect(breakerState(new Date(now), now)).to.equal('half_open');
  });

  it('spreads waits for a full endpoint by rank and recent attempt time, within bounds', () => {
    expect(saturatedWaitMs(0, 8, 100, 0.5)).to.equal(100);
    expect(saturatedWaitMs(8, 8, 100, 0.5)).to.equal(200);
    expect(saturatedWaitMs(0, 8, 0, 0.5), 'never a busy loop').to.equal(5);
    expect(saturatedWaitMs(10_000, 8, 9_000, 0.5)).to.equal(30_000);
    expect(saturatedWaitMs(0, 8, 100, 0)).to.equal(75);
    expect(saturatedWaitMs(0, 8, 100, 1)).to.equal(125);
  });

  describe('subscriptions', () => {
    it('matches glob patterns', () => {
      expect(patternMatches('payment.*', 'payment.succeeded')).to.equal(true);
      expect(patternMatches('payment.*', 'refund.succeeded')).to.equal(false);
      expect(patternMatches('*.failed', 'payout.failed')).to.equal(true);
      expect(patternMatches('refund.succeeded', 'refund.succeeded')).to.equal(true);
      expect(patternMatches('refund.succeeded', 'refund.succeededx')).to.equal(false);
      expect(patternMatches('payment.succeede', 'payment.succeeded')).to.equal(false);
      expect(patternMatches('payment.succeeded', 'paymentXsucceeded'), 'a dot is a dot').to.equal(false);
    });

    it('never subscribes to webhook.test, even with *', () => {
      expect(subscribes(['*'], 'webhook.test')).to.equal(false);
      for (const t of SUBSCRIBABLE_EVENT_TYPES) expect(subscribes(['*'], t)).to.equal(true);
    });

    it('refuses patterns that are malformed or match no event type', () => {
      for (const ok of ['*', 'payment.*', 'refund.succeeded', '*.failed', 'settlement.completed'])
        expect(patternProblem(ok), ok).to.equal(null);
      for (const bad of [
        '',
        'Payment.*',
        'payment.refunded',
        'webhook.test',
        'webhook.*',
        'payment succeeded',
        '.*',
        'a'.repeat(101),
      ]) {
        expect(patternProblem(bad), bad).to.be.a('string');
      }
    });
  });
});
