import { expect } from 'chai';
import { divRoundHalfUp, FeeError, feeFor, splitFees } from '../../shared/rules/fees';

describe('payment fees', () => {
  it('rounds half up on integers', () => {
    expect(divRoundHalfUp(5n, 10n)).to.equal(1n); // 0.5 → 1
    expect(divRoundHalfUp(4n, 10n)).to.equal(0n); // 0.4 → 0
    expect(divRoundHalfUp(15n, 10n)).to.equal(2n); // 1.5 → 2
    expect(divRoundHalfUp(25n, 10n)).to.equal(3n); // 2.5 → 3 (not banker's 2)
    expect(divRoundHalfUp(0n, 10n)).to.equal(0n);
  });

  it('computes percent_bps of the amount plus the fixed part', () => {
    expect(feeFor(10_000, { percent_bps: 250, fixed: 10 })).to.equal(260);
    expect(feeFor(1_234, { percent_bps: 250, fixed: 0 })).to.equal(31); // 30.85 → 31
    expect(feeFor(1_220, { percent_bps: 250, fixed: 0 })).to.equal(31); // 30.5 → 31
    expect(feeFor(1_219, { percent_bps: 250, fixed: 0 })).to.equal(30); // 30.475 → 30
    expect(feeFor(999, { percent_bps: 0, fixed: 0 })).to.equal(0);
  });

  it('stays exact where amount * percent_bps passes the safe integers', () => {
    const amount = Number.MAX_SAFE_INTEGER - 1; // 9007199254740990
    expect(amount * 10_000 > Number.MAX_SAFE_INTEGER).to.equal(true);
    expect(feeFor(amount, { percent_bps: 1, fixed: 0 })).to.equal(900719925474); // 900719925474.099 → ...474
    expect(feeFor(amount, { percent_bps: 10_000, fixed: 0 })).to.equal(amount);
  });

  it('merchant bears: charged = amount, net = amount - fee', () => {
    expect(splitFees(10_000, { percent_bps: 250, fixed: 10 }, 'merchant')).to.deep.equal({
      fee: 260,
      amountCharged: 10_000,
      amountNet: 9_740,
    });
  });

  it('customer bears: net = amount, charged = amount + fee', () => {
    expect(splitFees(10_000, { percent_bps: 250, fixed: 10 }, 'customer')).to.deep.equal({
      fee: 260,
      amountCharged: 10_260,
      amountNet: 10_000,
    });
  });

  it('refuses a merchant-borne fee that leaves the merchant less than 1', () => {
    expect(() => splitFees(10, { percent_bps: 0, fixed: 10 }, 'merchant')).to.throw(FeeError);
    expect(splitFees(11, { percent_bps: 0, fixed: 10 }, 'merchant').amountNet).to.equal(1);
    expect(splitFees(10, { percent_bps: 0, fixed: 10 }, 'customer')).to.deep.equal({
      fee: 10,
      amountCharged: 20,
      amountNet: 10,
    });
  });

  it('refuses a customer-borne total beyond the safe integers', () => {
    expect(() => splitFees(Number.MAX_SAFE_INTEGER, { percent_bps: 0, fixed: 1 }, 'customer')).to.throw(FeeError);
  });
});
