import { expect } from 'chai';
import { isMsisdn, operatorAccepts, OPERATOR_PREFIXES, OPERATORS } from '../../shared/msisdn';
import { sandboxOutcome } from '../../shared/providers/sandbox/behaviour';

describe('payment MSISDN rules', () => {
  it('accepts 243 followed by 9 digits only', () => {
    expect(isMsisdn('243810000000')).to.equal(true);
    for (const bad of [
      '+243810000000',
      '24381000000',
      '2438100000000',
      '244810000000',
      '243 81000000',
      '24381000000a',
      '',
    ]) {
      expect(isMsisdn(bad), bad).to.equal(false);
    }
  });

  it('in live, takes only the operator’s own national prefixes', () => {
    const all = Object.values(OPERATOR_PREFIXES).flat();
    for (const op of OPERATORS) {
      for (const prefix of all) {
        expect(operatorAccepts('live', op, `243${prefix}1234567`), `${op} ${prefix}`).to.equal(
          OPERATOR_PREFIXES[op].includes(prefix),
        );
      }
    }
    expect(operatorAccepts('live', 'vodacom', '243990000001')).to.equal(false);
  });

  it('in test, accepts the sandbox numbers with any operator', () => {
    for (const op of OPERATORS) expect(operatorAccepts('test', op, '243990000001')).to.equal(true);
  });

  it('plays the sandbox table', () => {
    expect(sandboxOutcome('payment', '243990000001')).to.deep.equal({ status: 'succeeded' });
    expect(sandboxOutcome('payment', '243990000002')).to.include({
      status: 'failed',
      failureCode: 'insufficient-funds',
    });
    expect(sandboxOutcome('payment', '243990000003')).to.include({ status: 'failed', failureCode: 'client-refused' });
    expect(sandboxOutcome('payment', '243990000004')).to.deep.equal({ status: 'never' });
    expect(sandboxOutcome('payment', '243990000005')).to.deep.equal({ status: 'succeeded' });
    expect(sandboxOutcome('refund', '243990000005')).to.include({
      status: 'failed',
      failureCode: 'recipient-inactive',
    });
    expect(sandboxOutcome('payout', '243990000005')).to.include({
      status: 'failed',
      failureCode: 'recipient-inactive',
    });
    expect(sandboxOutcome('payment', '243811234567')).to.deep.equal({ status: 'succeeded' });
  });
});
