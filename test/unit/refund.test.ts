import { expect } from 'chai';
import { Unprocessable } from '../../shared/errors';
import { refundAmount, refundTrigger } from '../../shared/rules/refund';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(Unprocessable);
    return (err as Unprocessable).code;
  }
  return undefined;
}

describe('refund rules', () => {
  describe('refundAmount', () => {
    const paid = { status: 'succeeded', method: 'mobile_money', amount_charged: 1000, amount_refunded: 0 };

    it('defaults to the whole rest not yet refunded', () => {
      expect(refundAmount(paid)).to.equal(1000);
      expect(refundAmount({ ...paid, amount_refunded: 300 })).to.equal(700);
    });

    it('accepts a partial amount, and exactly the rest', () => {
      expect(refundAmount(paid, 1)).to.equal(1);
      expect(refundAmount({ ...paid, amount_refunded: 300 }, 700)).to.equal(700);
    });

    it('refuses more than the rest with refund-exceeds-refundable', () => {
      expect(codeOf(() => refundAmount(paid, 1001))).to.equal('refund-exceeds-refundable');
      expect(codeOf(() => refundAmount({ ...paid, amount_refunded: 300 }, 701))).to.equal('refund-exceeds-refundable');
    });

    for (const status of ['pending', 'processing', 'failed', 'cancelled', 'refunded']) {
      it(`refuses a ${status} payment with payment-not-refundable`, () => {
        expect(codeOf(() => refundAmount({ ...paid, status }))).to.equal('payment-not-refundable');
      });
    }

    for (const status of ['succeeded', 'pending', 'failed']) {
      it(`refuses a ${status} card payment with card-refund-not-supported`, () => {
        expect(codeOf(() => refundAmount({ ...paid, method: 'card', status }, 10))).to.equal(
          'card-refund-not-supported',
        );
      });
    }
  });

  it('a payment is refunded in full exactly when its refunded amount reaches amount_charged', () => {
    expect(refundTrigger(1000, 1)).to.equal('refund_partial');
    expect(refundTrigger(1000, 999)).to.equal('refund_partial');
    expect(refundTrigger(1000, 1000)).to.equal('refund_in_full');
  });
});
