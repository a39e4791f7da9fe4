import { expect } from 'chai';
import { CallbackFormatError } from '../../shared/providers/errors';
import { parseCallbackBody } from '../../shared/providers/sandbox/protocol';
import { signCallback, verifyCallbackSignature } from '../../shared/providers/signature';
import { parseCursor, parseLimit } from '../../shared/db/pagination';
import { ValidationFailed } from '../../shared/errors';

const body = Buffer.from(
  JSON.stringify({
    event_id: 'e1',
    kind: 'payment',
    external_id: 'pay_x',
    provider_ref: 'R1',
    status: 'succeeded',
    failure_code: null,
    failure_message: null,
    occurred_at: 1,
  }),
);

function paramOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ValidationFailed);
    return (err as ValidationFailed).param;
  }
  return undefined;
}

describe('payment provider protocol', () => {
  const now = 1_800_000_000;

  it('verifies a fresh signature over the exact bytes', () => {
    const header = signCallback('s3cret', body, now);
    expect(verifyCallbackSignature('s3cret', body, header, now)).to.equal(true);
    expect(verifyCallbackSignature('s3cret', body, header, now + 300)).to.equal(true);
  });

  it('refuses another secret, altered bytes, a stale or future timestamp, and junk headers', () => {
    const header = signCallback('s3cret', body, now);
    expect(verifyCallbackSignature('other', body, header, now)).to.equal(false);
    expect(verifyCallbackSignature('s3cret', Buffer.concat([body, Buffer.from(' ')]), header, now)).to.equal(false);
    expect(verifyCallbackSignature('s3cret', body, header, now + 301)).to.equal(false);
    expect(verifyCallbackSignature('s3cret', body, header, now - 301)).to.equal(false);
    for (const junk of [undefined, '', 'v1=abc', `t=${now}`, `t=abc,v1=${'0'.repeat(64)}`, 'x'.repeat(600)]) {
      expect(verifyCallbackSignature('s3cret', body, junk, now), String(junk)).to.equal(false);
    }
  });

  it('parses a callback and refuses a malformed one', () => {
    expect(parseCallbackBody(body)).to.deep.equal({
      eventId: 'e1',
      kind: 'payment',
      objectId: 'pay_x',
      status: 'succeeded',
      providerRef: 'R1',
      failureCode: null,
      failureMessage: null,
    });
    expect(() => parseCallbackBody(Buffer.from('{'))).to.throw(CallbackFormatError);
    for (const bad of [
      {},
      { event_id: 'e', kind: 'loan', external_id: 'pay_x', status: 'succeeded' },
      { event_id: 'e', kind: 'payment', external_id: 'pay_x', status: 'maybe' },
      [],
    ]) {
      expect(() => parseCallbackBody(Buffer.from(JSON.stringify(bad))), JSON.stringify(bad)).to.throw(
        CallbackFormatError,
      );
    }
  });
});

describe('payment list pagination', () => {
  it('takes limit 1..100, default 20', () => {
    expect(parseLimit(undefined)).to.equal(20);
    expect(parseLimit('1')).to.equal(1);
    expect(parseLimit('100')).to.equal(100);
    for (const bad of ['0', '101', '-1', '1.5', 'ten', '', '0100'])
      expect(
        paramOf(() => parseLimit(bad)),
        bad,
      ).to.equal('limit');
  });

  it('reads `<created>.<id>` and bare Unix-second cursors', () => {
    const id = 'pay_3f2c8a4e-1b2d-4c3e-9f00-0123456789ab';
    expect(parseCursor(`1763700000.${id}`, 'pay_')).to.deep.equal({ created: 1763700000, id });
    expect(parseCursor('1763700000', 'pay_')).to.deep.equal({ created: 1763700000, id: null });
    expect(parseCursor(undefined, 'pay_')).to.equal(null);
    for (const bad of ['abc', `x.${id}`, '1763700000.pay_nope', `1763700000.po_${id.slice(4)}`, '1763700000.']) {
      expect(
        paramOf(() => parseCursor(bad, 'pay_')),
        bad,
      ).to.equal('cursor');
    }
  });
});
