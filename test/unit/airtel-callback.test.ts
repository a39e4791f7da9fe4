import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { HttpClient } from '../../shared/httpClient';
import { AirtelConnector, type AirtelConnectorOptions } from '../../shared/providers/airtel/connector';
import { callbackHash, hashMatches, hashedText } from '../../shared/providers/airtel/callbackHash';
import { CallbackFormatError } from '../../shared/providers/errors';

const SECRET = 'callback-private-key';
const UUID = '0f8fad5b-d9cb-469f-a165-70867728950e';
const AIRTEL_ID = 'P0f8fad5bd9cb469fa16570867728950e';

function connector(extra: Partial<AirtelConnectorOptions> = {}) {
  return new AirtelConnector({
    environment: 'live',
    baseUrl: 'http://127.0.0.1:9',
    clientId: 'id',
    clientSecret: 'secret',
    client: new HttpClient(1),
    ...extra,
  });
}

const body = (statusCode: 'TS' | 'TF' = 'TS') => ({
  transaction: {
    id: AIRTEL_ID,
    message: 'Paid USD 10.5 to MERCHANT, Trans ID MP210603.1234.L06941.',
    status_code: statusCode,
    airtel_money_id: 'MP210603.1234.L06941',
  },
});

const signed = (b: Record<string, unknown>, over: 'request' | 'transaction' = 'request') =>
  Buffer.from(JSON.stringify({ ...b, hash: callbackHash(SECRET, b, over) }));
const req = (raw: Buffer, headers: Record<string, string> = {}) => ({ raw, headers, ip: '127.0.0.1', nowUnix: 0 });

describe('airtel callback hash', () => {
  it('is HMAC-SHA256 of the request without its hash, base64, under the private key', () => {
    const b = body();
    const expected = createHmac('sha256', SECRET).update(JSON.stringify(b)).digest('base64');
    expect(callbackHash(SECRET, b, 'request')).to.equal(expected);
    expect(hashedText({ ...b, hash: 'x' }, 'request')).to.equal(JSON.stringify(b));
    expect(hashedText({ ...b, hash: 'x' }, 'transaction')).to.equal(JSON.stringify(b.transaction));
    expect(hashMatches(SECRET, b, expected, 'request')).to.equal(true);
    expect(hashMatches(SECRET, b, expected, 'transaction')).to.equal(false);
    expect(hashMatches('other', b, expected, 'request')).to.equal(false);
    expect(hashMatches(SECRET, b, 'not base64!', 'request')).to.equal(false);
    expect(hashMatches(SECRET, b, expected.slice(0, 20), 'request')).to.equal(false);
  });
});

describe('airtel connector: callbacks', () => {
  it('verifies a signed callback, and says invalid when it is altered, forged, unsigned or not JSON', async () => {
    const c = connector({ callbackHashSecret: SECRET });
    expect(await c.verifyCallback(req(signed(body())))).to.equal('verified');
    const altered = JSON.parse(signed(body()).toString()) as { transaction: { status_code: string } };
    altered.transaction.status_code = 'TF';
    expect(await c.verifyCallback(req(Buffer.from(JSON.stringify(altered))))).to.equal('invalid');
    const forged = { ...body(), hash: createHmac('sha256', 'guess').update(JSON.stringify(body())).digest('base64') };
    expect(await c.verifyCallback(req(Buffer.from(JSON.stringify(forged))))).to.equal('invalid');
    expect(await c.verifyCallback(req(Buffer.from(JSON.stringify(body()))))).to.equal('invalid');
    expect(await c.verifyCallback(req(Buffer.from('{not json')))).to.equal('invalid');
    expect(await c.verifyCallback(req(Buffer.from('[1]')))).to.equal('invalid');
  });

  it('takes the hash from a `hash` header too, and hashes the transaction alone when so configured', async () => {
    const c = connector({ callbackHashSecret: SECRET });
    const b = body();
    expect(
      await c.verifyCallback(req(Buffer.from(JSON.stringify(b)), { hash: callbackHash(SECRET, b, 'request') })),
    ).to.equal('verified');
    const t = connector({ callbackHashSecret: SECRET, callbackHashOver: 'transaction' });
    expect(await t.verifyCallback(req(signed(b, 'transaction')))).to.equal('verified');
    expect(await t.verifyCallback(req(signed(b, 'request')))).to.equal('invalid');
  });

  it('says unsigned when callback authentication is off, whatever the body', async () => {
    expect(await connector().verifyCallback(req(signed(body())))).to.equal('unsigned');
    expect(await connector().verifyCallback(req(Buffer.from('x')))).to.equal('unsigned');
  });

  it('parses a success and a failure into our form, with a stable event id', () => {
    const c = connector();
    const ok = c.parseCallback(signed(body('TS')), {});
    expect(ok).to.deep.include({
      kind: 'payment',
      objectId: `pay_${UUID}`,
      status: 'succeeded',
      providerRef: 'MP210603.1234.L06941',
      failureCode: null,
      amount: null,
      currency: null,
    });
    const again = c.parseCallback(Buffer.from(JSON.stringify(body('TS'))), {});
    expect(again !== 'ignore' && ok !== 'ignore' && again.eventId).to.equal(ok !== 'ignore' && ok.eventId);
    const ko = c.parseCallback(Buffer.from(JSON.stringify(body('TF'))), {});
    expect(ko).to.deep.include({ status: 'failed', failureCode: 'provider-failed' });
    expect(ko !== 'ignore' && ok !== 'ignore' && ko.eventId).not.to.equal(ok !== 'ignore' && ok.eventId);
    // Airtel's free text (it may carry a phone number) is not kept
    expect(JSON.stringify(ko)).not.to.include('MERCHANT');
  });

  it("throws CallbackFormatError for what is not Airtel's callback", () => {
    const c = connector();
    const bad = (raw: string) => () => c.parseCallback(Buffer.from(raw), {});
    expect(bad('{x')).to.throw(CallbackFormatError);
    expect(bad('{}')).to.throw(CallbackFormatError);
    expect(bad(JSON.stringify({ transaction: { ...body().transaction, status_code: 'TIP' } }))).to.throw(
      CallbackFormatError,
    );
    expect(bad(JSON.stringify({ transaction: { ...body().transaction, id: 'someone-else' } }))).to.throw(
      CallbackFormatError,
      /not one of ours/,
    );
  });

  it('answers Airtel with a 200', () => {
    expect(connector().callbackAnswer()).to.deep.equal({ status: 200 });
  });
});

describe('airtel connector: capabilities', () => {
  it('serves airtel only, full refunds only, USD and CDF, payouts only with a PIN and key', () => {
    const c = connector();
    expect(c.capabilities.operators).to.deep.equal(['airtel']);
    expect(c.capabilities.partialRefunds).to.equal(false);
    expect(c.capabilities.directions).to.deep.equal(['collection', 'refund']);
    expect(c.capabilities.amountRule('airtel', 'USD', 'collection')).to.deep.equal({
      decimals: 2,
      min: 10,
      max: 250_000,
    });
    expect(c.capabilities.amountRule('vodacom', 'USD', 'collection')).to.equal(undefined);
    expect(c.capabilities.amountRule('airtel', 'USD', 'payout')).to.equal(undefined);
    const only = connector({ currencies: ['USD'], amountRules: { USD: { min: 100, max: null } } });
    expect(only.capabilities.amountRule('airtel', 'CDF', 'collection')).to.equal(undefined);
    expect(only.capabilities.amountRule('airtel', 'USD', 'refund')).to.deep.equal({ decimals: 2, min: 100, max: null });
    expect(() => connector({ amountRules: { CDF: { decimals: 3 } } })).to.throw(/decimals/);
    expect(() => connector({ disbursementPin: '1234' })).to.throw(/both/);
  });
});
