import { expect } from 'chai';
import { decimalToMinor, decimalsNeeded, minorToDecimal } from '../../shared/providers/amounts';
import { refuseUncarriable } from '../../shared/providers/routing';
import type { AmountRule, Connector } from '../../shared/providers/connector';
import { Unprocessable } from '../../shared/errors';

describe('provider amounts (exact, no floating point)', () => {
  it('writes minor units as pawaPay-style decimals without trailing zeros, or with every decimal', () => {
    const cases: [number, string, string][] = [
      [10050, '100.5', '100.50'],
      [10000, '100', '100.00'],
      [1, '0.01', '0.01'],
      [10, '0.1', '0.10'],
      [0, '0', '0.00'],
      [123456789012345, '1234567890123.45', '1234567890123.45'],
      [Number.MAX_SAFE_INTEGER, '90071992547409.91', '90071992547409.91'],
    ];
    for (const [minor, bare, full] of cases) {
      expect(minorToDecimal(minor, 'USD'), String(minor)).to.equal(bare);
      expect(minorToDecimal(minor, 'CDF', true), String(minor)).to.equal(full);
    }
    expect(() => minorToDecimal(1.5, 'USD')).to.throw(RangeError);
    expect(() => minorToDecimal(-1, 'USD')).to.throw(RangeError);
  });

  it('reads echoed decimals back exactly ("100.00" is 10000), and refuses what is not a plain amount', () => {
    expect(decimalToMinor('100.00', 'USD')).to.equal(10000);
    expect(decimalToMinor('100.5', 'USD')).to.equal(10050);
    expect(decimalToMinor('100', 'CDF')).to.equal(10000);
    expect(decimalToMinor('0.1', 'USD')).to.equal(10);
    expect(decimalToMinor('100.500', 'USD'), 'trailing zeros beyond the exponent are still exact').to.equal(10050);
    // 0.1 + 0.2 style inputs never pass through a double
    expect(decimalToMinor('90071992547409.91', 'USD')).to.equal(Number.MAX_SAFE_INTEGER);
    for (const bad of ['100.001', '-1', '1e3', '1,00', '', '.5', '5.', 'NaN', '90071992547409.92'])
      expect(decimalToMinor(bad, 'USD'), bad).to.equal(undefined);
  });

  it('counts the decimals an amount needs', () => {
    expect([2500, 2550, 2555, 0].map((m) => decimalsNeeded(m, 'USD'))).to.deep.equal([0, 1, 2, 0]);
  });
});

describe('routing: an amount a connector cannot carry is refused before anything is sent', () => {
  const connector = (rule: AmountRule | undefined) =>
    ({
      id: 'pawapay',
      capabilities: {
        operators: ['vodacom'],
        directions: ['collection'],
        partialRefunds: true,
        amountRule: () => rule,
      },
    }) as unknown as Connector;
  const refusal = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      return err as Unprocessable;
    }
    return undefined;
  };

  it('no decimals in CDF: 100.50 CDF is 422 amount-not-supported naming the rule, 100 CDF passes', () => {
    const c = connector({ decimals: 0, min: null, max: null });
    const err = refusal(() => refuseUncarriable(c, 'vodacom', 'collection', 'CDF', 10050));
    expect(err).to.be.instanceOf(Unprocessable);
    expect(err).to.include({ code: 'amount-not-supported', param: 'amount' });
    expect(err!.message).to.match(/vodacom takes no decimals in CDF, and 100\.5 CDF has more/);
    expect(refusal(() => refuseUncarriable(c, 'vodacom', 'collection', 'CDF', 10000))).to.equal(undefined);
  });

  it('outside the provider min/max: 422 naming the bound; on the bound passes', () => {
    const c = connector({ decimals: 2, min: 100, max: 500_000 });
    expect(refusal(() => refuseUncarriable(c, 'vodacom', 'collection', 'USD', 99))!.message).to.match(
      /below its minimum of 1 USD/,
    );
    expect(refusal(() => refuseUncarriable(c, 'vodacom', 'collection', 'USD', 500_001))!.message).to.match(
      /above its maximum of 5000 USD/,
    );
    expect(refusal(() => refuseUncarriable(c, 'vodacom', 'collection', 'USD', 100))).to.equal(undefined);
    expect(refusal(() => refuseUncarriable(c, 'vodacom', 'collection', 'USD', 500_000))).to.equal(undefined);
  });

  it('a currency the connector does not carry: 422 on currency', () => {
    expect(refusal(() => refuseUncarriable(connector(undefined), 'vodacom', 'collection', 'USD', 100))).to.include({
      code: 'amount-not-supported',
      param: 'currency',
    });
  });
});
