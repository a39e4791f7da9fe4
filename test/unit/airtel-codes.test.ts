import { expect } from 'chai';
import { FAILURE_CODES } from '../../shared/providers/failureCodes';
import {
  classify,
  COLLECTION_CODES,
  DISBURSEMENT_CODES,
  ESB_CODES,
  ROUTER_CODES,
} from '../../shared/providers/airtel/codes';

describe('airtel codes', () => {
  it('maps every failure onto our vocabulary', () => {
    for (const table of [COLLECTION_CODES, DISBURSEMENT_CODES, ESB_CODES, ROUTER_CODES]) {
      for (const [code, { is }] of Object.entries(table)) {
        if (is.class === 'failed') expect(Object.keys(FAILURE_CODES), code).to.include(is.failureCode);
      }
    }
  });

  it('maps the documented failures to the right words', () => {
    const failureOf = (rc: string) => {
      const c = classify(rc, undefined);
      return c?.class === 'failed' ? c.failureCode : c?.class;
    };
    expect(failureOf('DP00800001007')).to.equal('insufficient-funds');
    expect(failureOf('DP00800001002')).to.equal('client-refused');
    expect(failureOf('DP00800001003')).to.equal('limit-reached');
    expect(failureOf('DP00800001005')).to.equal('client-timeout');
    expect(failureOf('DP00800001024')).to.equal('client-timeout');
    expect(failureOf('DP00800001010')).to.equal('wallet-limited');
    expect(failureOf('DP00800001004')).to.equal('amount-out-of-bounds');
    expect(failureOf('DP00900001007')).to.equal('insufficient-funds');
    expect(failureOf('DP00900001012')).to.equal('recipient-inactive');
    expect(failureOf('DP00900001004')).to.equal('amount-out-of-bounds');
    expect(failureOf('ROUTER116')).to.equal('provider-refused');
    expect(classify('DP00800001029', undefined)).to.deep.equal({
      class: 'failed',
      failureCode: 'client-timeout',
      state: 'expired',
    });
  });

  it('never calls an ambiguous, timed-out or duplicate answer a failure', () => {
    expect(classify('DP00800001000', undefined)?.class).to.equal('unknown');
    expect(classify('DP00900001000', undefined)?.class).to.equal('unknown');
    expect(classify('DP00900001014', undefined)?.class).to.equal('unknown');
    expect(classify('DP00900001017', undefined)?.class).to.equal('duplicate');
    expect(classify(undefined, 'ESB000041')?.class).to.equal('duplicate');
    expect(classify(undefined, 'ESB000001')?.class).to.equal('unknown');
    expect(classify(undefined, 'ESB000004')?.class).to.equal('unknown');
    expect(classify('DP00800001006', 'ESB000010')?.class).to.equal('ok');
    expect(classify('DP00800001025', undefined)?.class).to.equal('not_found');
    expect(classify(undefined, 'ESB000045')?.class).to.equal('not_found');
    expect(classify('DP00800001026', undefined)?.class).to.equal('auth');
  });

  it('reads the response code before the ESB result code, and knows nothing of unknown codes', () => {
    expect(classify('DP00800001007', 'ESB000010')).to.deep.equal({
      class: 'failed',
      failureCode: 'insufficient-funds',
    });
    expect(classify('DP99999', 'ESB000011')).to.deep.equal({ class: 'failed', failureCode: 'provider-failed' });
    expect(classify('DP99999', 'ESB99')).to.equal(undefined);
    expect(classify(42, null)).to.equal(undefined);
  });
});
