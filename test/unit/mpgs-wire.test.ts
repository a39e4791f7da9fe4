import { expect } from 'chai';
import { FAILURE_CODES } from '../../shared/providers/failureCodes';
import { classify, GATEWAY_CODES } from '../../shared/providers/mpgs/codes';
import { check } from '../../shared/providers/mpgs/schema';
import { carries, loadMpgsSettings, MpgsSettingsError } from '../../shared/providers/mpgs/settings';
import {
  amountFromWire,
  amountOnWire,
  authTransactionId,
  decideAuthentication,
  orderIdOf,
  payBody,
  payTransactionId,
  readTransaction,
  cardOf,
  refundBody,
  refundTransactionId,
  updateSessionBody,
  type TransactionView,
} from '../../shared/providers/mpgs/wire';

const PAYMENT = 'pay_3f2b9c1e-8d4a-4b6f-9a2e-1c3d5e7f9a0b';

describe('mpgs wire: amounts', () => {
  it('writes minor units as decimal strings in major units, exactly', () => {
    expect(amountOnWire(1050, 'USD')).to.equal('10.50');
    expect(amountOnWire(1050, 'USD', 'minimal')).to.equal('10.5');
    expect(amountOnWire(1, 'CDF')).to.equal('0.01');
    expect(amountOnWire(30, 'USD')).to.equal('0.30');
    expect(amountOnWire(100_000_000_000_1, 'USD')).to.equal('10000000000.01');
  });

  it('reads string and JSON-number amounts back to the same minor units', () => {
    for (const minor of [1, 7, 10, 99, 101, 1005, 123456, 999999999, 100000000001]) {
      const text = amountOnWire(minor, 'USD');
      expect(amountFromWire(text, 'USD')).to.equal(minor);
      // the gateway's JSON answers carry numbers: JSON.parse keeps the shortest text
      expect(amountFromWire(JSON.parse(text) as number, 'USD'), text).to.equal(minor);
    }
    expect(amountFromWire('10.001', 'USD')).to.equal(undefined);
    expect(amountFromWire(1e21, 'USD')).to.equal(undefined);
    expect(amountFromWire(-1, 'USD')).to.equal(undefined);
    expect(amountFromWire('ten', 'USD')).to.equal(undefined);
  });
});

describe('mpgs wire: ids and requests', () => {
  it('derives the order id from the payment id and deterministic transaction ids per attempt', () => {
    expect(orderIdOf(PAYMENT)).to.equal(PAYMENT);
    expect(payTransactionId(1)).to.equal('pay-1');
    expect(payTransactionId(1)).to.equal(payTransactionId(1));
    expect(authTransactionId(2)).to.equal('auth-2');
    expect(refundTransactionId('re_3f2b9c1e-8d4a-4b6f-9a2e-1c3d5e7f9a0b')).to.have.length(39);
    expect(() => payTransactionId(0)).to.throw(RangeError);
    expect(() => orderIdOf('x'.repeat(41))).to.throw(RangeError);
  });

  it('builds requests that pass the schemas, and the schemas refuse what the gateway would', () => {
    expect(check('updateSessionRequest', updateSessionBody(2500, 'USD', PAYMENT, 'fixed'))).to.deep.equal([]);
    const pay = payBody(
      { sessionId: 'SESSION0002ABC', minor: 2500, currency: 'CDF', authenticationTransactionId: 'auth-1' },
      'fixed',
    );
    expect(check('payRequest', pay)).to.deep.equal([]);
    expect(check('refundRequest', refundBody(100, 'USD', 'minimal'))).to.deep.equal([]);
    expect(check('payRequest', { ...pay, extra: 1 })[0].path).to.equal('/extra');
    const badAmount = { ...pay, order: { amount: '25.0001', currency: 'CDF' } };
    expect(check('payRequest', badAmount)[0].path).to.equal('/order/amount');
    expect(check('payRequest', { ...pay, order: { amount: 25, currency: 'CDF' } })[0].path).to.equal('/order/amount');
  });
});

const view = (over: Partial<TransactionView>): TransactionView => ({
  result: 'SUCCESS',
  gatewayCode: 'APPROVED',
  gatewayRecommendation: 'PROCEED',
  orderId: PAYMENT,
  transactionId: 'auth-1',
  type: 'AUTHENTICATION',
  amount: 100,
  currency: 'USD',
  orderStatus: null,
  totalCaptured: null,
  totalRefunded: null,
  authenticationStatus: 'AUTHENTICATION_SUCCESSFUL',
  payerInteraction: null,
  redirectHtml: null,
  card: null,
  ...over,
});

const PAID = {
  result: 'SUCCESS',
  response: { gatewayCode: 'APPROVED' },
  order: { id: PAYMENT, currency: 'USD' },
  transaction: { id: 'pay-1', type: 'PAYMENT' },
};

describe('mpgs wire: answers and 3-D Secure', () => {
  it('reads a transaction answer, JSON-number amounts included', () => {
    const t = readTransaction({
      result: 'FAILURE',
      response: { gatewayCode: 'DECLINED' },
      order: { id: PAYMENT, currency: 'USD', amount: 10.5, totalCapturedAmount: 0 },
      transaction: { id: 'pay-1', type: 'PAYMENT', amount: 10.5, currency: 'USD' },
    });
    expect(t).to.include({
      result: 'FAILURE',
      gatewayCode: 'DECLINED',
      amount: 1050,
      currency: 'USD',
      totalCaptured: 0,
    });
    expect(t.card).to.equal(null);
  });

  it("reads the card's brand, last 4 digits and expiry from sourceOfFunds, and nothing else of its number", () => {
    const t = readTransaction({
      result: 'SUCCESS',
      response: { gatewayCode: 'APPROVED' },
      order: { id: PAYMENT, currency: 'USD', amount: '10.00' },
      transaction: { id: 'pay-1', type: 'PAYMENT' },
      sourceOfFunds: {
        type: 'CARD',
        provided: { card: { brand: 'MASTERCARD', number: '512345xxxxxx0008', expiry: { month: '1', year: '39' } } },
      },
    });
    expect(t.card).to.deep.equal({ brand: 'mastercard', last4: '0008', exp_month: 1, exp_year: 2039 });
    expect(JSON.stringify(t)).not.to.contain('512345');
    expect(cardOf({ brand: 'VISA', number: '450875xxxxxx1019', expiry: { month: '05', year: '2031' } })).to.deep.equal({
      brand: 'visa',
      last4: '1019',
      exp_month: 5,
      exp_year: 2031,
    });
    expect(cardOf({ brand: 'DISCOVER', number: '601100xxxxxx0004', expiry: { month: 12, year: 30 } })?.brand).to.equal(
      'unknown',
    );
    expect(cardOf({ brand: 'VISA', number: 'xxxx', expiry: { month: '1', year: '39' } })).to.equal(null);
    expect(cardOf({ brand: 'VISA', number: '450875xxxxxx1019', expiry: { month: '13', year: '39' } })).to.equal(null);
    expect(cardOf(undefined)).to.equal(null);
    // an unreadable card never puts the answer out of the schema
    expect(check('transactionAnswer', { ...PAID, sourceOfFunds: { provided: { card: {} } } })).to.deep.equal([]);
  });

  it('pays after a successful or exempted authentication only when the gateway says PROCEED', () => {
    expect(decideAuthentication(view({}), 'refuse')).to.deep.equal({ next: 'pay', authenticated: true });
    expect(decideAuthentication(view({ gatewayRecommendation: 'DO_NOT_PROCEED' }), 'proceed').next).to.equal('fail');
    expect(decideAuthentication(view({ gatewayRecommendation: 'SOMETHING_NEW' }), 'proceed').next).to.equal('fail');
    expect(
      decideAuthentication(view({ authenticationStatus: 'AUTHENTICATION_FAILED', result: 'FAILURE' }), 'proceed').next,
    ).to.equal('fail');
    expect(decideAuthentication(view({ authenticationStatus: 'AUTHENTICATION_AVAILABLE' }), 'proceed').next).to.equal(
      'authenticate',
    );
    expect(
      decideAuthentication(
        view({ authenticationStatus: 'AUTHENTICATION_PENDING', redirectHtml: '<div></div>' }),
        'proceed',
      ),
    ).to.deep.equal({
      next: 'challenge',
      html: '<div></div>',
    });
    expect(decideAuthentication(view({ authenticationStatus: 'AUTHENTICATION_PENDING' }), 'proceed').next).to.equal(
      'unknown',
    );
    expect(
      decideAuthentication(view({ authenticationStatus: 'AUTHENTICATION_NOT_SUPPORTED' }), 'proceed'),
    ).to.deep.equal({
      next: 'pay',
      authenticated: false,
    });
    expect(
      decideAuthentication(view({ authenticationStatus: 'AUTHENTICATION_NOT_SUPPORTED' }), 'refuse').next,
    ).to.equal('fail');
    expect(decideAuthentication(view({ authenticationStatus: null }), 'proceed').next).to.equal('unknown');
    expect(decideAuthentication(view({ result: 'UNKNOWN' }), 'proceed').next).to.equal('unknown');
  });
});

describe('mpgs codes', () => {
  it('maps every gatewayCode to one of our failure codes, or to approved, or to settle-by-retrieve', () => {
    for (const [code, c] of Object.entries(GATEWAY_CODES)) {
      if (c.class === 'failed') expect(Object.keys(FAILURE_CODES), code).to.include(c.failureCode);
      if (c.class === 'settle' && c.finalFailure) expect(Object.keys(FAILURE_CODES), code).to.include(c.finalFailure);
    }
    expect(classify('FAILURE', 'DECLINED', false)).to.deep.equal({ state: 'failed', failureCode: 'card-declined' });
    expect(classify('FAILURE', 'INSUFFICIENT_FUNDS', false)).to.deep.equal({
      state: 'failed',
      failureCode: 'insufficient-funds',
    });
    expect(classify('FAILURE', 'EXPIRED_CARD', false)).to.deep.equal({ state: 'failed', failureCode: 'expired-card' });
    expect(classify('FAILURE', 'AUTHENTICATION_FAILED', false)).to.deep.equal({
      state: 'failed',
      failureCode: 'authentication-failed',
    });
    expect(classify('SUCCESS', 'APPROVED', false)).to.deep.equal({ state: 'succeeded' });
  });

  it('never fails a payment on an answer whose outcome is unknown', () => {
    for (const code of [
      'TIMED_OUT',
      'ACQUIRER_SYSTEM_ERROR',
      'SYSTEM_ERROR',
      'PENDING',
      'SUBMITTED',
      'UNKNOWN',
      'NEW_CODE',
    ])
      expect(classify('FAILURE', code, false).state, code).to.equal('unknown');
    for (const result of ['PENDING', 'UNKNOWN', 'ERROR'])
      expect(classify(result, 'APPROVED', false).state).to.equal('unknown');
    expect(classify('SUCCESS', 'PARTIALLY_APPROVED', true).state).to.equal('unknown');
    expect(classify('FAILURE', 'UNKNOWN', true).state).to.equal('unknown');
    // the gateway's own record saying FAILURE settles a timed-out acquirer
    expect(classify('FAILURE', 'TIMED_OUT', true)).to.deep.equal({ state: 'failed', failureCode: 'provider-failed' });
  });
});

describe('mpgs settings', () => {
  const base = {
    MPGS_GATEWAY_URL: 'https://ap-gateway.mastercard.com',
    MPGS_MERCHANT_ID: 'TESTBANK01',
    MPGS_API_PASSWORD: 'pw',
    MPGS_NOTIFICATION_SECRET: '0123456789abcdef0123',
  };

  it('is null when unset, and reads defaults and choices', () => {
    expect(loadMpgsSettings({})).to.equal(null);
    const s = loadMpgsSettings({ ...base, MPGS_CURRENCIES: 'USD,CDF', MPGS_MAX_USD: '5000' }, false)!;
    expect(s).to.include({ apiVersion: 100, threeDSecure: true, amountFormat: 'fixed', whenUnavailable: 'proceed' });
    expect(s.currencies).to.deep.equal(['USD', 'CDF']);
    expect(s.limits.USD).to.deep.equal({ min: 100, max: 5000 });
    expect(carries(s, 5000, 'USD')).to.equal(true);
    expect(carries(s, 5001, 'USD')).to.equal(false);
  });

  it('refuses half a configuration, http or a TEST merchant in production', () => {
    expect(() => loadMpgsSettings({ MPGS_MERCHANT_ID: 'X' })).to.throw(MpgsSettingsError, /MPGS_GATEWAY_URL/);
    expect(() => loadMpgsSettings({ ...base, MPGS_GATEWAY_URL: 'http://gw.example' }, true)).to.throw(
      MpgsSettingsError,
    );
    expect(() => loadMpgsSettings(base, true)).to.throw(MpgsSettingsError, /TEST/);
    expect(() => loadMpgsSettings({ ...base, MPGS_CURRENCIES: 'EUR' }, false)).to.throw(MpgsSettingsError);
    expect(() => loadMpgsSettings({ ...base, MPGS_GATEWAY_URL: 'https://gw.example/api' }, false)).to.throw(
      MpgsSettingsError,
    );
  });
});
