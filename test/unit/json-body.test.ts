import { expect } from 'chai';
import { parseJson, roundedNumber } from '../../api/body';
import { DomainError } from '../../shared/errors';

/** The request body's JSON (api/body.ts): docs/decisions.md#integers-are-integers-in-the-text, "Metadata keys". */
describe('JSON request bodies', () => {
  const refusal = (text: string) => {
    try {
      parseJson(Buffer.from(text, 'utf8'));
    } catch (err) {
      expect(err).to.be.instanceOf(DomainError);
      const e = err as DomainError;
      return { code: e.code, param: e.param, message: e.message };
    }
    return null;
  };

  it('refuses an amount written with a fraction or an exponent, even one a double rounds to an integer', () => {
    for (const amount of ['1000000000000.0000001', '1000.0', '1e3', '1E3', '10e-1', '-5.0', '1.5e2']) {
      const r = refusal(`{"amount": ${amount}, "currency": "USD"}`);
      expect(r, amount).to.deep.include({ code: 'validation-failed', param: 'amount' });
      expect(r!.message).to.equal('amount must be an integer, written without a fraction or an exponent');
    }
    // nested fields are named by their path (the admin API's fees and limits)
    expect(refusal('{"fees": {"USD": {"percent_bps": 250, "fixed": 10.0}}}')).to.deep.include({
      param: 'fees.USD.fixed',
    });
    expect(refusal('{"list": [1, 2, 3e0]}')).to.deep.include({ param: 'list.2' });
  });

  it('accepts integers as integers, fractions in strings, and any number in metadata', () => {
    expect(
      parseJson(
        Buffer.from('{"amount": 1000000000000, "description": "1.5e3 of 2.0", "metadata": {"rate": 2.0, "k": 1e3}}'),
      ),
    ).to.deep.equal({
      amount: 1e12,
      description: '1.5e3 of 2.0',
      metadata: { rate: 2, k: 1000 },
    });
    expect(roundedNumber('{"a": "\\"1.0\\"", "b": 1}')).to.equal(null);
    // a true fraction is left to the schema, which refuses it as not an integer where one is asked
    expect(roundedNumber('{"amount": 10.5}')).to.equal(null);
  });

  it('names metadata, and never the refused key, for a NUL in a metadata key or value', () => {
    expect(refusal('{"metadata": {"k\\u0000": "v"}}')).to.deep.include({
      code: 'validation-failed',
      param: 'metadata',
    });
    expect(refusal('{"metadata": {"k": "v\\u0000"}}')).to.deep.include({ param: 'metadata' });
    const r = refusal('{"description": "x", "a\\u0000b": 1}')!;
    expect(r.param).to.equal('body');
    expect(r.message).not.to.include('\u0000');
    expect(refusal('{"reference": "r\\u0000"}')).to.deep.include({ param: 'reference' });
  });
});
