import { expect } from 'chai';
import { customerMessage } from '../../shared/providers/pawapay/connector';
import { checkContract, describeErrors } from '../../shared/providers/pawapay/contract';
import { FAILURE_CODES } from '../../shared/providers/failureCodes';
import {
  FAILURE_MAP,
  KINDS,
  callbackEventId,
  fromPawapayAmount,
  mapFailure,
  maskPhone,
  ourId,
  pawapayId,
  pawapayPhone,
  toPawapayAmount,
} from '../../shared/providers/pawapay/wire';

const UUID = '0b6e8f4e-3c1d-4a52-9f1e-2d7c5b8a9e10';

describe('pawaPay wire: amounts, ids, phones, failure codes', () => {
  it('sends minor units as pawaPay amount strings with no trailing zeros', () => {
    expect(toPawapayAmount(10050, 'USD')).to.equal('100.5');
    expect(toPawapayAmount(10000, 'USD')).to.equal('100');
    expect(toPawapayAmount(10055, 'CDF')).to.equal('100.55');
    expect(toPawapayAmount(5, 'USD')).to.equal('0.05');
    expect(toPawapayAmount(50, 'USD')).to.equal('0.5');
    expect(toPawapayAmount(1, 'CDF')).to.equal('0.01');
    expect(toPawapayAmount(123456789012, 'CDF')).to.equal('1234567890.12');
    for (const minor of [1, 5, 10, 50, 99, 100, 101, 110, 10050, 999999999]) {
      const text = toPawapayAmount(minor, 'USD');
      expect(text, text).to.not.match(/\.\d*0$/);
      expect(fromPawapayAmount(text, 'USD')).to.equal(minor);
    }
  });

  it('reads echoed amounts exactly, trailing zeros or not, and refuses what is not an amount of the currency', () => {
    expect(fromPawapayAmount('100.00', 'USD')).to.equal(10000);
    expect(fromPawapayAmount('100.50', 'CDF')).to.equal(10050);
    expect(fromPawapayAmount('100.5', 'CDF')).to.equal(10050);
    expect(fromPawapayAmount('100', 'CDF')).to.equal(10000);
    expect(fromPawapayAmount('0.10', 'USD')).to.equal(10);
    expect(fromPawapayAmount('100.001', 'USD')).to.equal(undefined);
    expect(fromPawapayAmount('-5', 'USD')).to.equal(undefined);
    expect(fromPawapayAmount('1e3', 'USD')).to.equal(undefined);
    expect(fromPawapayAmount(100, 'USD')).to.equal(undefined);
  });

  it('the request schema takes the amounts we send and refuses trailing zeros, leading zeros and bad forms', () => {
    const body = (amount: string) => ({
      depositId: UUID,
      amount,
      currency: 'USD',
      payer: { type: 'MMO', accountDetails: { phoneNumber: '243813456789', provider: 'VODACOM_MPESA_COD' } },
    });
    for (const ok of ['100', '100.5', '0.5', '0.05', '5555555'])
      expect(checkContract('depositRequest', body(ok)).ok, ok).to.equal(true);
    for (const bad of ['100.50', '100.00', '5.', '.5', '00.5', '-5.5', '1,5', '']) {
      const r = checkContract('depositRequest', body(bad));
      expect(r.ok, bad).to.equal(false);
      expect(describeErrors(r.errors)).to.contain('/amount');
    }
  });

  it('the request schemas refuse unknown fields and a phone of another provider', () => {
    const base = {
      depositId: UUID,
      amount: '100',
      currency: 'CDF',
      payer: { type: 'MMO', accountDetails: { phoneNumber: '243813456789', provider: 'VODACOM_MPESA_COD' } },
    };
    expect(checkContract('depositRequest', base).ok).to.equal(true);
    expect(checkContract('depositRequest', { ...base, extra: 1 }).errors[0].keyword).to.equal('additionalProperties');
    const airtelNumber = {
      ...base,
      payer: { type: 'MMO', accountDetails: { phoneNumber: '243973456789', provider: 'VODACOM_MPESA_COD' } },
    };
    expect(checkContract('depositRequest', airtelNumber).errors[0].instancePath).to.equal(
      '/payer/accountDetails/phoneNumber',
    );
    expect(
      checkContract('refundRequest', { refundId: UUID, depositId: UUID, amount: '1', currency: 'CDF' }).ok,
    ).to.equal(true);
    expect(
      checkContract('payoutRequest', { payoutId: 'not-a-uuid', amount: '1', currency: 'CDF', recipient: base.payer })
        .ok,
    ).to.equal(false);
  });

  it('maps our ids onto pawaPay UUIDs and back, deterministically', () => {
    expect(pawapayId(`pay_${UUID}`, KINDS.payment)).to.equal(UUID);
    expect(pawapayId(`po_${UUID}`, KINDS.payout)).to.equal(UUID);
    expect(pawapayId(`re_${UUID}`, KINDS.refund)).to.equal(UUID);
    expect(ourId(UUID, KINDS.refund)).to.equal(`re_${UUID}`);
    expect(pawapayId(`po_${UUID}`, KINDS.payment)).to.equal(undefined);
    // not a v4 UUID
    expect(pawapayId('pay_0b6e8f4e-3c1d-1a52-9f1e-2d7c5b8a9e10', KINDS.payment)).to.equal(undefined);
    expect(pawapayId('pay_123', KINDS.payment)).to.equal(undefined);
  });

  it('sends our MSISDN as is and masks it in logs', () => {
    expect(pawapayPhone('243813456789')).to.equal('243813456789');
    expect(pawapayPhone('0813456789')).to.equal(undefined);
    expect(pawapayPhone('+243813456789')).to.equal(undefined);
    expect(maskPhone('243813456789')).to.equal('243*****6789');
  });

  it('maps every listed pawaPay failure code onto our vocabulary; an unknown one is provider-failed', () => {
    for (const [theirs, ours] of Object.entries(FAILURE_MAP))
      expect(Object.keys(FAILURE_CODES), theirs).to.include(ours);
    expect(mapFailure('PAYER_NOT_FOUND', 'payment').failureCode).to.equal('payer-not-found');
    expect(mapFailure('PAYMENT_NOT_APPROVED', 'payment').failureCode).to.equal('client-refused');
    expect(mapFailure('INSUFFICIENT_BALANCE', 'payment').failureCode).to.equal('insufficient-funds');
    // a payout's INSUFFICIENT_BALANCE is the merchant's own pawaPay wallet
    expect(mapFailure('INSUFFICIENT_BALANCE', 'payout').failureCode).to.equal('provider-refused');
    expect(mapFailure('PAYER_LIMIT_REACHED', 'payment').failureCode).to.equal('limit-reached');
    expect(mapFailure('RECIPIENT_NOT_FOUND', 'payout').failureCode).to.equal('payer-not-found');
    expect(mapFailure('AMOUNT_OUT_OF_BOUNDS', 'refund').failureCode).to.equal('amount-out-of-bounds');
    expect(mapFailure('PROVIDER_TEMPORARILY_UNAVAILABLE', 'payment').failureCode).to.equal('operator-unavailable');
    expect(mapFailure('UNSPECIFIED_FAILURE', 'payment').failureCode).to.equal('provider-failed');
    expect(mapFailure('SOMETHING_NEW', 'payment')).to.deep.equal({
      failureCode: 'provider-failed',
      failureMessage: 'The provider reported a failure (pawaPay SOMETHING_NEW)',
    });
    expect(mapFailure(undefined, 'payment').failureCode).to.equal('provider-failed');
    expect(mapFailure('PAYER_NOT_FOUND', 'payment', 'Wallet not found').failureMessage).to.equal(
      'Wallet not found (pawaPay PAYER_NOT_FOUND)',
    );
  });

  it('gives a callback without an event id a stable id from its transaction and status', () => {
    const a = callbackEventId('payment', UUID, 'COMPLETED');
    expect(callbackEventId('payment', UUID.toUpperCase(), 'COMPLETED')).to.equal(a);
    expect(callbackEventId('payment', UUID, 'FAILED')).to.not.equal(a);
    expect(callbackEventId('refund', UUID, 'COMPLETED')).to.not.equal(a);
  });

  it("turns a description into pawaPay's customerMessage (4 to 22 letters, digits, spaces) or nothing", () => {
    expect(customerMessage('Commande n°42 — café')).to.equal('Commande n 42 cafe');
    expect(customerMessage('A very long description of the order')).to.equal('A very long descriptio');
    expect(customerMessage('ab')).to.equal(undefined);
    expect(customerMessage(null)).to.equal(undefined);
    expect(
      checkContract('depositRequest', {
        depositId: UUID,
        amount: '1',
        currency: 'CDF',
        customerMessage: customerMessage('Commande n°42 — café'),
        payer: { type: 'MMO', accountDetails: { phoneNumber: '243813456789', provider: 'VODACOM_MPESA_COD' } },
      }).ok,
    ).to.equal(true);
  });
});
