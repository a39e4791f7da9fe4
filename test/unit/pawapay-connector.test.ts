import { expect } from 'chai';
import type { HttpAnswer, HttpCall, HttpClient } from '../../shared/httpClient';
import { ProviderError } from '../../shared/providers/errors';
import { PawapayConnector } from '../../shared/providers/pawapay/connector';

const UUID = '0b6e8f4e-3c1d-4a52-9f1e-2d7c5b8a9e10';
type Answer = { status: number; body?: unknown } | 'timeout';

/** An HttpClient answering from a script of answers per "METHOD path", recording the calls. */
function scripted(script: Record<string, Answer[]>) {
  const calls: string[] = [];
  const client = {
    async request(url: string, call: HttpCall): Promise<HttpAnswer> {
      const key = `${call.method} ${new URL(url).pathname}`;
      calls.push(key);
      const next = script[key]?.shift();
      if (!next) throw new Error(`unscripted ${key}`);
      if (next === 'timeout') throw Object.assign(new Error('no answer'), { name: 'TimeoutError' });
      const body =
        next.body === undefined
          ? Buffer.alloc(0)
          : Buffer.from(typeof next.body === 'string' ? next.body : JSON.stringify(next.body));
      return { status: next.status, headers: {}, body };
    },
    close() {},
  };
  const connector = new PawapayConnector({
    environment: 'live',
    baseUrl: 'http://pawapay.invalid/',
    apiToken: 'secret-token',
    callbackSignatures: 'off',
    timeoutMs: 100,
    client: client as unknown as HttpClient,
    activeConfRefreshMs: 0,
  });
  return { calls, connector };
}

const push = (c: PawapayConnector) =>
  c.push({
    paymentId: `pay_${UUID}`,
    operator: 'airtel',
    amount: 1000,
    currency: 'USD',
    msisdn: '243973456789',
    description: null,
  });
const ask = (c: PawapayConnector) =>
  c.ask({ kind: 'payment', id: `pay_${UUID}`, providerRef: UUID, operator: 'airtel', currency: 'USD', created: 0 });
const POST = 'POST /v2/deposits';
const GET = `GET /v2/deposits/${UUID}`;
const found = (status: string, extra: object = {}) => ({
  status: 200,
  body: { status: 'FOUND', data: { depositId: UUID, status, amount: '10.00', currency: 'USD', ...extra } },
});

async function rejection(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(ProviderError);
    return err as ProviderError;
  }
  throw new Error('expected a ProviderError');
}

describe('PawapayConnector initiation outcomes (scripted answers)', () => {
  it('ACCEPTED and DUPLICATE_IGNORED are accepted, with the UUID as the reference', async () => {
    for (const status of ['ACCEPTED', 'DUPLICATE_IGNORED']) {
      const { calls, connector } = scripted({ [POST]: [{ status: 200, body: { depositId: UUID, status } }] });
      expect(await push(connector)).to.deep.equal({ providerRef: UUID });
      expect(calls).to.deep.equal([POST]);
    }
  });

  it('REJECTED fails permanently with the mapped code, whatever the HTTP status', async () => {
    const a = scripted({
      [POST]: [
        {
          status: 200,
          body: {
            depositId: UUID,
            status: 'REJECTED',
            failureReason: { failureCode: 'AMOUNT_OUT_OF_BOUNDS', failureMessage: 'too big' },
          },
        },
      ],
    });
    expect(await rejection(push(a.connector))).to.deep.include({
      retryable: false,
      code: 'amount-out-of-bounds',
      message: 'too big (pawaPay AMOUNT_OUT_OF_BOUNDS)',
    });
    const b = scripted({
      [POST]: [{ status: 400, body: { status: 'REJECTED', failureReason: { failureCode: 'INVALID_PARAMETER' } } }],
    });
    expect(await rejection(push(b.connector))).to.deep.include({ retryable: false, code: 'provider-refused' });
    // v1's field name
    const c = scripted({
      [POST]: [{ status: 200, body: { status: 'REJECTED', rejectionReason: { rejectionCode: 'INVALID_CURRENCY' } } }],
    });
    expect(await rejection(push(c.connector))).to.deep.include({ retryable: false, code: 'provider-refused' });
  });

  it('credentials refused: retryable, the token never in the message', async () => {
    for (const answer of [
      { status: 403, body: { failureReason: { failureCode: 'AUTHENTICATION_ERROR' } } },
      { status: 401 },
    ]) {
      const { connector } = scripted({ [POST]: [answer] });
      const err = await rejection(push(connector));
      expect(err).to.deep.include({ retryable: true, code: 'provider-auth' });
      expect(err.message).to.not.contain('secret-token');
    }
  });

  it('unknown outcome (timeout, 5xx, UNKNOWN_ERROR, unparsable, unexpected status) then found: accepted, no resend', async () => {
    const unknowns: Answer[] = [
      'timeout',
      { status: 502, body: 'Bad gateway' },
      { status: 200, body: { status: 'REJECTED', failureReason: { failureCode: 'UNKNOWN_ERROR' } } },
      { status: 200, body: '<html>' },
      { status: 200, body: { status: 'MAYBE' } },
    ];
    for (const first of unknowns) {
      const { calls, connector } = scripted({ [POST]: [first], [GET]: [found('ACCEPTED')] });
      expect(await push(connector), JSON.stringify(first)).to.deep.equal({ providerRef: UUID });
      expect(calls).to.deep.equal([POST, GET]);
    }
  });

  it('unknown outcome then not found: the same request again; unknown again or status unknown: retryable', async () => {
    const a = scripted({
      [POST]: ['timeout', { status: 200, body: { depositId: UUID, status: 'ACCEPTED' } }],
      [GET]: [{ status: 200, body: { status: 'NOT_FOUND' } }],
    });
    expect(await push(a.connector)).to.deep.equal({ providerRef: UUID });
    expect(a.calls).to.deep.equal([POST, GET, POST]);
    const b = scripted({ [POST]: ['timeout', { status: 500 }], [GET]: [{ status: 404 }] });
    expect(await rejection(push(b.connector))).to.deep.include({ retryable: true, code: 'provider-unknown-outcome' });
    const c = scripted({ [POST]: ['timeout'], [GET]: ['timeout'] });
    expect(await rejection(push(c.connector))).to.deep.include({ retryable: true, code: 'provider-unknown-outcome' });
    expect(c.calls).to.deep.equal([POST, GET]);
  });
});

describe('PawapayConnector.ask (scripted answers)', () => {
  it('COMPLETED succeeded and FAILED failed, with the echoed amount in minor units', async () => {
    expect(await ask(scripted({ [GET]: [found('COMPLETED')] }).connector)).to.deep.equal({
      state: 'succeeded',
      providerRef: UUID,
      amount: 1000,
      currency: 'USD',
    });
    expect(
      await ask(
        scripted({
          [GET]: [found('FAILED', { failureReason: { failureCode: 'PAYMENT_NOT_APPROVED', failureMessage: 'No' } })],
        }).connector,
      ),
    ).to.deep.equal({
      state: 'failed',
      providerRef: UUID,
      failureCode: 'client-refused',
      failureMessage: 'No (pawaPay PAYMENT_NOT_APPROVED)',
      amount: 1000,
      currency: 'USD',
    });
    expect(await ask(scripted({ [GET]: [found('FAILED')] }).connector)).to.deep.include({
      state: 'failed',
      failureCode: 'provider-failed',
    });
  });

  it('every open status, and one it does not know, is pending', async () => {
    for (const s of ['ACCEPTED', 'ENQUEUED', 'SUBMITTED', 'PROCESSING', 'IN_RECONCILIATION', 'SOMETHING_NEW']) {
      expect(await ask(scripted({ [GET]: [found(s)] }).connector), s).to.deep.equal({
        state: 'pending',
        providerRef: UUID,
      });
    }
  });

  it('NOT_FOUND and 404 are not_found; 5xx, a timeout or a malformed answer are retryable', async () => {
    expect(await ask(scripted({ [GET]: [{ status: 200, body: { status: 'NOT_FOUND' } }] }).connector)).to.deep.equal({
      state: 'not_found',
    });
    expect(await ask(scripted({ [GET]: [{ status: 404 }] }).connector)).to.deep.equal({ state: 'not_found' });
    for (const a of [
      { status: 503 },
      'timeout' as const,
      { status: 200, body: { status: 'FOUND' } },
      { status: 200, body: 'nope' },
    ]) {
      expect((await rejection(ask(scripted({ [GET]: [a] }).connector))).retryable, JSON.stringify(a)).to.equal(true);
    }
  });
});
