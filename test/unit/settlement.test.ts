import { expect } from 'chai';
import { outgoingDebit, outgoingDeliver, paymentCredit, reversal, type Posting } from '../../shared/rules/ledger';
import { ConfigError, loadConfig } from '../../shared/config';
import { lastCutoff, parseDailyTime, settlementFigures, type CoveredKindTotal } from '../../shared/rules/settlement';

const M = 'mer_1';
const base = { merchantId: M, environment: 'test' as const, currency: 'USD' as const };
const credit = (id: string, amountCharged: number, fee: number) =>
  paymentCredit({ ...base, paymentId: id, amountCharged, amountNet: amountCharged - fee, fee });

/** What settle() reads from Postgres: per kind, the number of transactions and their entries summed per account. */
function totals(postings: Posting[]): CoveredKindTotal[] {
  const byKind = new Map<string, CoveredKindTotal>();
  for (const p of postings) {
    const t = byKind.get(p.kind) ?? { kind: p.kind, transactions: 0, entries: [] };
    t.transactions += 1;
    for (const e of p.entries) {
      const same = t.entries.find((x) => x.owner === e.account.owner && x.account === e.account.kind);
      if (same) same.amount = Number(same.amount) + e.amount;
      else t.entries.push({ owner: e.account.owner, account: e.account.kind, amount: e.amount });
    }
    byKind.set(p.kind, t);
  }
  return [...byKind.values()];
}

describe('settlement figures', () => {
  it('sums payments: gross is amount_charged, fees the fees, net what reached available', () => {
    const f = settlementFigures(M, totals([credit('pay_1', 10_000, 250), credit('pay_2', 5_000, 0)]));
    expect(f).to.deep.equal({ gross: 15_000, fees: 250, refunds: 0, payouts: 0, net: 14_750, count: 2 });
  });

  it('takes refunds and payouts (fee included) at their debit, less what failed ones gave back', () => {
    const refund = { ...base, referenceId: 're_1', amount: 2_000 };
    const failedRefund = { ...base, referenceId: 're_2', amount: 500 };
    const payout = { ...base, referenceId: 'po_1', amount: 3_000, fee: 35 };
    const failedPayout = { ...base, referenceId: 'po_2', amount: 1_000, fee: 15 };
    const refundDebit2 = outgoingDebit('refund', failedRefund);
    const payoutDebit2 = outgoingDebit('payout', failedPayout);
    const f = settlementFigures(
      M,
      totals([
        credit('pay_1', 20_000, 500),
        outgoingDebit('refund', refund),
        refundDebit2,
        reversal(refundDebit2, 'refund_return'),
        outgoingDebit('payout', payout),
        payoutDebit2,
        reversal(payoutDebit2, 'payout_return'),
      ]),
    );
    expect(f).to.deep.equal({ gross: 20_000, fees: 500, refunds: 2_000, payouts: 3_035, net: 14_465, count: 7 });
    expect(Number(f.gross) - Number(f.fees) - Number(f.refunds) - Number(f.payouts)).to.equal(f.net);
  });

  it('lowers a later period by a return whose debit an earlier batch counted', () => {
    const debit = outgoingDebit('payout', { ...base, referenceId: 'po_1', amount: 1_000, fee: 15 });
    expect(settlementFigures(M, totals([reversal(debit, 'payout_return')]))).to.deep.equal({
      gross: 0,
      fees: 0,
      refunds: 0,
      payouts: -1_015,
      net: 1_015,
      count: 1,
    });
  });

  it('sums exactly beyond the safe integers: numbers while safe, bigints beyond, from Postgres text', () => {
    const huge = (2n ** 53n + 3n).toString(); // 9007199254740995: not a double
    const f = settlementFigures(M, [
      {
        kind: 'payment_credit',
        transactions: 2,
        entries: [
          { owner: M, account: 'available', amount: huge },
          { owner: 'platform', account: 'fees', amount: '5' },
          { owner: 'platform', account: 'provider_clearing', amount: `-${2n ** 53n + 8n}` },
        ],
      },
      {
        kind: 'payout_debit',
        transactions: 1,
        entries: [
          { owner: M, account: 'available', amount: -100 },
          { owner: M, account: 'in_transit', amount: 100 },
        ],
      },
    ]);
    // gross passes 2^53 - 1 (a bigint, exact); net, 100 lower, is back among the safe integers (a number)
    expect(f).to.deep.equal({
      gross: 2n ** 53n + 8n,
      fees: 5,
      refunds: 0,
      payouts: 100,
      net: 9_007_199_254_740_895,
      count: 3,
    });
    expect(
      settlementFigures(M, [
        {
          kind: 'payment_credit',
          transactions: 1,
          entries: [{ owner: M, account: 'available', amount: String(Number.MAX_SAFE_INTEGER) }],
        },
      ]).gross,
    ).to.equal(Number.MAX_SAFE_INTEGER);
  });

  it('refuses a kind no batch covers (settle postings never reach available)', () => {
    const settled = outgoingDeliver('refund', { ...base, referenceId: 're_1', amount: 100 });
    expect(() => settlementFigures(M, totals([settled]))).to.throw(/refund_deliver has no place/);
  });
});

describe('daily cut-off', () => {
  it('parses HH:MM (UTC) and refuses anything else', () => {
    expect(parseDailyTime('00:00')).to.equal(0);
    expect(parseDailyTime('23:59')).to.equal(23 * 60 + 59);
    expect(parseDailyTime('06:30')).to.equal(390);
    for (const bad of ['24:00', '7:00', '12:60', '12:00:00', '', 'noon'])
      expect(parseDailyTime(bad), bad).to.equal(null);
  });

  it('is the latest cut-off at or before now', () => {
    const day = Date.UTC(2026, 10, 21) / 1000; // 2026-11-21 00:00 UTC
    expect(lastCutoff(day + 3_600, 0)).to.equal(day);
    expect(lastCutoff(day, 0)).to.equal(day);
    expect(lastCutoff(day + 3_600, 120)).to.equal(day - 86_400 + 7_200); // 02:00 not yet reached: yesterday's
    expect(lastCutoff(day + 7_200, 120)).to.equal(day + 7_200);
  });
});

describe('settlement configuration', () => {
  it('reads SETTLEMENT_TIME_UTC and SETTLEMENT_CHECK_INTERVAL_MS, defaults 00:00 and 60 s', () => {
    expect(loadConfig({}).settlement).to.deep.equal({ cutoffMinutesUtc: 0, checkIntervalMs: 60_000 });
    expect(loadConfig({ SETTLEMENT_TIME_UTC: '18:45', SETTLEMENT_CHECK_INTERVAL_MS: '5000' }).settlement).to.deep.equal(
      { cutoffMinutesUtc: 1_125, checkIntervalMs: 5_000 },
    );
  });

  it('stops on a malformed time or interval', () => {
    expect(() => loadConfig({ SETTLEMENT_TIME_UTC: '24:00' })).to.throw(ConfigError, /SETTLEMENT_TIME_UTC/);
    expect(() => loadConfig({ SETTLEMENT_CHECK_INTERVAL_MS: 'often' })).to.throw(
      ConfigError,
      /SETTLEMENT_CHECK_INTERVAL_MS/,
    );
  });
});
