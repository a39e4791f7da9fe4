import { expect } from 'chai';
import { Unprocessable } from '../../shared/errors';
import { refuseUnrefundableCard } from '../../shared/refunds/operator';
import { refundableAmount } from '../../shared/rules/refund';
import type { CardConnector } from '../../shared/providers/cardConnector';
import type { PaymentRow } from '../../shared/db/rows';

/**
 * The operator's card refund checks that need no database (docs/decisions.md#operator-admin-api):
 * the amount rules, and what the payment's card connector can take. The whole route:
 * test/integration/card-refunds.test.ts.
 */

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(Unprocessable);
    return (err as Unprocessable).code;
  }
  return undefined;
}

const connector = (partialRefunds: boolean, decimals = 2) =>
  ({
    id: 'acquirer-x',
    capabilities: {
      currencies: ['USD'],
      amountRule: (currency: string) => (currency === 'USD' ? { decimals, min: null, max: null } : undefined),
      partialRefunds,
      void: false,
    },
  }) as unknown as CardConnector;

const registry = (c: CardConnector | undefined) => ({ card: (id: string | null) => (id === c?.id ? c : undefined) });

const payment = (over: Partial<PaymentRow> = {}) =>
  ({ provider: 'acquirer-x', amount_charged: 5_000, amount_refunded: 0, currency: 'USD', ...over }) as PaymentRow;

describe('operator card refund checks', () => {
  it('a card payment succeeded: its rest by default, a part, never more than the rest', () => {
    const paid = { status: 'succeeded', method: 'card', amount_charged: 5_000, amount_refunded: 1_000 };
    expect(refundableAmount(paid)).to.equal(4_000);
    expect(refundableAmount(paid, 1)).to.equal(1);
    expect(codeOf(() => refundableAmount(paid, 4_001))).to.equal('refund-exceeds-refundable');
    for (const status of ['pending', 'processing', 'failed', 'cancelled', 'refunded'])
      expect(codeOf(() => refundableAmount({ ...paid, status }))).to.equal('payment-not-refundable');
  });

  it('a connector that refunds only in full takes a full refund and refuses a partial one (partial-refund-not-supported)', () => {
    const c = connector(false);
    expect(refuseUnrefundableCard(registry(c), payment(), 5_000)).to.equal(c);
    expect(codeOf(() => refuseUnrefundableCard(registry(c), payment(), 4_999))).to.equal(
      'partial-refund-not-supported',
    );
    expect(refuseUnrefundableCard(registry(connector(true)), payment(), 1)).to.have.property('id', 'acquirer-x');
  });

  it('the payment card connector not configured: method-unavailable', () => {
    expect(codeOf(() => refuseUnrefundableCard(registry(undefined), payment(), 5_000))).to.equal('method-unavailable');
    expect(
      codeOf(() => refuseUnrefundableCard(registry(connector(true)), payment({ provider: null }), 5_000)),
    ).to.equal('method-unavailable');
  });

  it('an amount the connector cannot carry: amount-not-supported', () => {
    // whole units only: 12.34 USD cannot go
    expect(codeOf(() => refuseUnrefundableCard(registry(connector(true, 0)), payment(), 1_234))).to.equal(
      'amount-not-supported',
    );
    expect(
      codeOf(() => refuseUnrefundableCard(registry(connector(true)), payment({ currency: 'CDF' }), 1_000)),
    ).to.equal('amount-not-supported');
  });
});
