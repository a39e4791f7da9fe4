import { expect } from 'chai';
import {
  assertBalanced,
  normalise,
  outgoingDebit,
  outgoingKinds,
  outgoingDeliver,
  paymentCredit,
  reversal,
  UnbalancedPosting,
  type Posting,
} from '../../shared/rules/ledger';

const base = { referenceId: 're_1', merchantId: 'mer_1', environment: 'test' as const, currency: 'USD' as const };
const sumOf = (p: Posting) => p.entries.reduce((s, e) => s + e.amount, 0);
const byAccount = (p: Posting) =>
  Object.fromEntries(p.entries.map((e) => [`${e.account.owner}/${e.account.kind}`, e.amount]));

describe('ledger rules', () => {
  describe('assertBalanced', () => {
    const posting = (amounts: number[]): Posting => ({
      ...base,
      kind: 'test',
      entries: amounts.map((amount, i) => ({ account: { owner: `o${i}`, kind: 'available' }, amount })),
    });

    it('accepts entries summing to zero', () => {
      expect(() => assertBalanced(posting([100, -60, -40]))).not.to.throw();
    });

    const bad: [string, number[]][] = [
      ['entries not summing to zero', [100, -99]],
      ['a single entry', [0]],
      ['a zero entry', [100, -100, 0]],
      ['a fractional amount', [0.5, -0.5]],
      ['an unsafe integer', [2 ** 53, -(2 ** 53)]],
      ['NaN', [NaN, 1]],
    ];
    for (const [what, amounts] of bad) {
      it(`refuses ${what}`, () => {
        expect(() => assertBalanced(posting(amounts))).to.throw(UnbalancedPosting);
      });
    }
  });

  it('normalise merges entries on one account and drops zeros', () => {
    const p = normalise({
      ...base,
      kind: 'k',
      entries: [
        { account: { owner: 'a', kind: 'available' }, amount: 5 },
        { account: { owner: 'a', kind: 'available' }, amount: -5 },
        { account: { owner: 'b', kind: 'fees' }, amount: 3 },
        { account: { owner: 'c', kind: 'fees' }, amount: -3 },
      ],
    });
    expect(p.entries).to.deep.equal([
      { account: { owner: 'b', kind: 'fees' }, amount: 3 },
      { account: { owner: 'c', kind: 'fees' }, amount: -3 },
    ]);
  });

  describe('paymentCredit', () => {
    it('credits net to the merchant and the fee to the platform against the provider', () => {
      const p = paymentCredit({
        paymentId: 'pay_1',
        merchantId: 'mer_1',
        environment: 'test',
        currency: 'CDF',
        amountCharged: 1030,
        amountNet: 1000,
        fee: 30,
      });
      expect(p).to.include({
        kind: 'payment_credit',
        referenceId: 'pay_1',
        currency: 'CDF',
        environment: 'test',
        merchantId: 'mer_1',
      });
      expect(byAccount(p)).to.deep.equal({
        'platform/provider_clearing': -1030,
        'mer_1/available': 1000,
        'platform/fees': 30,
      });
      expect(sumOf(p)).to.equal(0);
    });

    it('leaves out a zero fee', () => {
      const p = paymentCredit({
        paymentId: 'pay_1',
        merchantId: 'mer_1',
        environment: 'live',
        currency: 'USD',
        amountCharged: 500,
        amountNet: 500,
        fee: 0,
      });
      expect(byAccount(p)).to.deep.equal({ 'platform/provider_clearing': -500, 'mer_1/available': 500 });
      expect(() => assertBalanced(p)).not.to.throw();
    });
  });

  describe('outgoing movements (refunds and payouts)', () => {
    for (const kind of ['refund', 'payout'] as const) {
      it(`${kind}: the debit moves amount + fee from available to in transit`, () => {
        const p = outgoingDebit(kind, { ...base, amount: 700, fee: 20 });
        expect(p.kind).to.equal(`${kind}_debit`);
        expect(byAccount(p)).to.deep.equal({ 'mer_1/available': -720, 'mer_1/in_transit': 720 });
        expect(() => assertBalanced(p)).not.to.throw();
      });

      it(`${kind}: the settlement sends the amount through the provider and the fee to the platform`, () => {
        const p = outgoingDeliver(kind, { ...base, amount: 700, fee: 20 });
        expect(p.kind).to.equal(`${kind}_deliver`);
        expect(byAccount(p)).to.deep.equal({
          'mer_1/in_transit': -720,
          'platform/provider_clearing': 700,
          'platform/fees': 20,
        });
        expect(() => assertBalanced(p)).not.to.throw();
      });

      it(`${kind}: without a fee, only the amount moves`, () => {
        expect(byAccount(outgoingDebit(kind, { ...base, amount: 700 }))).to.deep.equal({
          'mer_1/available': -700,
          'mer_1/in_transit': 700,
        });
        expect(byAccount(outgoingDeliver(kind, { ...base, amount: 700, fee: 0 }))).to.deep.equal({
          'mer_1/in_transit': -700,
          'platform/provider_clearing': 700,
        });
      });
    }

    it('debit then deliver leaves nothing in transit; debit then return gives everything back', () => {
      const a = { ...base, amount: 700, fee: 20 };
      const net = (...ps: Posting[]) => {
        const total: Record<string, number> = {};
        for (const p of ps) for (const [k, v] of Object.entries(byAccount(p))) total[k] = (total[k] ?? 0) + v;
        return Object.fromEntries(Object.entries(total).filter(([, v]) => v !== 0));
      };
      const debit = outgoingDebit('payout', a);
      expect(net(debit, outgoingDeliver('payout', a))).to.deep.equal({
        'mer_1/available': -720,
        'platform/provider_clearing': 700,
        'platform/fees': 20,
      });
      const back = reversal(debit, outgoingKinds('payout').return);
      expect(back.kind).to.equal('payout_return');
      expect(net(debit, back)).to.deep.equal({});
    });

    it('names one posting kind per step', () => {
      expect(outgoingKinds('refund')).to.deep.equal({
        debit: 'refund_debit',
        deliver: 'refund_deliver',
        return: 'refund_return',
      });
    });
  });
});
