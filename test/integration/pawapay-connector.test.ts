import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpClient, type HttpAnswer, type HttpCall } from '../../shared/httpClient';
import type { Operator } from '../../shared/vocabulary';
import type { NormalisedCallback } from '../../shared/providers/connector';
import { ProviderError } from '../../shared/providers/errors';
import { PawapayConnector, type PawapayConnectorOptions } from '../../shared/providers/pawapay/connector';
import { checkContract, describeErrors, REQUEST_CONTRACT } from '../../shared/providers/pawapay/contract';
import { startPawapaySimulator, type PawapaySimulator } from '../../scripts/simulators/pawapay/simulator';

/**
 * The pawaPay connector against its simulator over loopback: every scenario of the simulator's
 * test-number table, the unknown-outcome paths, signed callbacks received on a real HTTP server
 * and verified by the connector, and every request the connector sent checked against the JSON
 * Schemas of the contract (the simulator checks them with the same schemas on arrival).
 */

const TOKEN = 'pp-test-token-6f2d1c';
const NUMBERS = { vodacom: '243813456', airtel: '243973456', orange: '243893456' } as const;
const phone = (operator: keyof typeof NUMBERS, tail: string) => NUMBERS[operator] + tail;

interface Received {
  raw: Buffer;
  headers: http.IncomingHttpHeaders;
}

/** Records every request the connector sends (method, path, body), then hands it to a real client. */
class RecordingClient extends HttpClient {
  sent: { method: string; path: string; body?: unknown }[] = [];
  override request(url: string, call: HttpCall): Promise<HttpAnswer> {
    this.sent.push({
      method: call.method,
      path: new URL(url).pathname,
      body: call.body === undefined ? undefined : JSON.parse(call.body),
    });
    return super.request(url, call);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, fn: () => T | undefined | false, timeoutMs = 5000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function rejection(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(ProviderError);
    return err as ProviderError;
  }
  throw new Error('expected a ProviderError');
}

describe('pawaPay connector against its simulator (loopback)', function () {
  this.timeout(20_000);
  let sim: PawapaySimulator;
  let receiver: http.Server;
  let callbackUrl: string;
  const received: Received[] = [];
  let client: RecordingClient;
  let connector: PawapayConnector;
  /** request bodies the test sends on purpose against the contract (their ids) */
  const meantInvalid = new Set<string>();
  /** every line the connectors logged */
  const logs: string[] = [];
  const log = {
    info: (o: object, m: string) => logs.push(`${m} ${JSON.stringify(o)}`),
    warn: (o: object, m: string) => logs.push(`${m} ${JSON.stringify(o)}`),
  };

  function make(over: Partial<PawapayConnectorOptions> = {}): PawapayConnector {
    return new PawapayConnector({
      environment: 'live',
      baseUrl: sim.url,
      apiToken: TOKEN,
      callbackSignatures: 'required',
      callbackUrl,
      timeoutMs: 1000,
      client,
      activeConfRefreshMs: 0,
      availabilityTtlMs: 0,
      keyRefetchMinMs: 0,
      log,
      ...over,
    });
  }

  before(async () => {
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ raw: Buffer.concat(chunks), headers: req.headers });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callbacks/pawapay`;
    sim = await startPawapaySimulator({
      token: TOKEN,
      callbackUrl,
      callbackDelayMs: 120,
      slowInitiationMs: 2500,
      reconciliationMs: 300,
    });
    client = new RecordingClient();
    connector = make();
    expect(await connector.refreshActiveConf()).to.equal(true);
  });

  after(async () => {
    connector.close();
    client.close();
    await sim.close();
    receiver.closeAllConnections();
    await new Promise<void>((r) => receiver.close(() => r()));
  });

  afterEach(() => {
    // the contract: every initiation the connector sent is valid under the JSON Schemas
    for (const s of client.sent) {
      if (s.method !== 'POST') continue;
      const name = REQUEST_CONTRACT[s.path as keyof typeof REQUEST_CONTRACT];
      expect(name, `${s.path} is an initiation path`).to.be.a('string');
      const body = s.body as Record<string, string>;
      if (meantInvalid.has(body.depositId ?? body.payoutId ?? body.refundId)) continue;
      const r = checkContract(name, s.body);
      expect(r.ok, `${s.path} ${JSON.stringify(s.body)}: ${describeErrors(r.errors)}`).to.equal(true);
    }
  });

  const callbacksOf = (uuid: string) => received.filter((r) => r.raw.toString().includes(uuid));
  const simTx = (uuid: string) => sim.transactions().find((t) => t.id === uuid)!;
  const initiationsSent = (uuid: string) =>
    client.sent.filter((s) => s.method === 'POST' && JSON.stringify(s.body).includes(`Id":"${uuid}"`)).length;

  async function verifiedCallback(uuid: string, index = 0): Promise<NormalisedCallback | 'ignore'> {
    const cb = await until(`callback ${index + 1} of ${uuid}`, () => callbacksOf(uuid)[index]);
    const v = await connector.verifyCallback({
      raw: cb.raw,
      headers: cb.headers,
      ip: '127.0.0.1',
      nowUnix: Math.floor(Date.now() / 1000),
    });
    expect(v, 'callback signature').to.equal('verified');
    return connector.parseCallback(cb.raw, cb.headers);
  }

  async function pay(operator: Operator, msisdn: string, amount = 150000, currency: 'CDF' | 'USD' = 'CDF') {
    const uuid = randomUUID();
    const accepted = await connector.push({
      paymentId: `pay_${uuid}`,
      operator,
      amount,
      currency,
      msisdn,
      description: 'Order 42',
    });
    return { uuid, accepted };
  }

  it('reads the amount rules from active-conf', () => {
    expect(connector.activeConfReady).to.equal(true);
    expect(connector.capabilities.amountRule('vodacom', 'CDF', 'collection')).to.deep.equal({
      decimals: 0,
      min: 50000,
      max: 100000000,
    });
    expect(connector.capabilities.amountRule('airtel', 'CDF', 'payout')).to.deep.equal({
      decimals: 2,
      min: 10000,
      max: 625000000,
    });
    expect(connector.capabilities.amountRule('africell', 'CDF', 'collection')).to.equal(undefined);
    expect(connector.capabilities.operators).to.deep.equal(['vodacom', 'airtel', 'orange']);
    expect(connector.capabilities.partialRefunds).to.equal(true);
  });

  it('a payment succeeds: accepted, a signed callback verified and normalised, the status answer with its echoed amount', async () => {
    const { uuid, accepted } = await pay('airtel', phone('airtel', '789'), 150050);
    expect(accepted).to.deep.equal({ providerRef: uuid });
    const sent = client.sent.find((s) => s.method === 'POST' && (s.body as { depositId?: string }).depositId === uuid)!;
    expect(sent.body).to.deep.include({ amount: '1500.5', currency: 'CDF', customerMessage: 'Order 42' });
    expect((sent.body as { payer: unknown }).payer).to.deep.equal({
      type: 'MMO',
      accountDetails: { phoneNumber: '243973456789', provider: 'AIRTEL_COD' },
    });
    const cb = await verifiedCallback(uuid);
    expect(cb).to.deep.include({
      kind: 'payment',
      objectId: `pay_${uuid}`,
      status: 'succeeded',
      providerRef: uuid,
      failureCode: null,
      amount: 150050,
      currency: 'CDF',
    });
    // the simulator echoes "1500.50": read back exactly
    expect(JSON.parse(callbacksOf(uuid)[0].raw.toString()).amount).to.equal('1500.50');
    const status = await connector.ask({
      kind: 'payment',
      id: `pay_${uuid}`,
      providerRef: uuid,
      operator: 'airtel',
      currency: 'CDF',
      created: Date.now(),
    });
    expect(status).to.deep.equal({ state: 'succeeded', providerRef: uuid, amount: 150050, currency: 'CDF' });
    expect(simTx(uuid)).to.deep.include({ status: 'COMPLETED', initiations: 1 });
  });

  const depositFailures: [string, string, string][] = [
    ['019', 'PAYER_LIMIT_REACHED', 'limit-reached'],
    ['029', 'PAYER_NOT_FOUND', 'payer-not-found'],
    ['039', 'PAYMENT_NOT_APPROVED', 'client-refused'],
    ['049', 'INSUFFICIENT_BALANCE', 'insufficient-funds'],
    ['069', 'UNSPECIFIED_FAILURE', 'provider-failed'],
  ];
  for (const [tail, theirs, ours] of depositFailures) {
    it(`a payment to …${tail} fails with ${theirs}, mapped to ${ours} (callback and status)`, async () => {
      const { uuid } = await pay('vodacom', phone('vodacom', tail));
      const cb = await verifiedCallback(uuid);
      expect(cb).to.deep.include({ status: 'failed', failureCode: ours });
      expect((cb as NormalisedCallback).failureMessage).to.contain(theirs);
      const status = await connector.ask({
        kind: 'payment',
        id: `pay_${uuid}`,
        providerRef: uuid,
        operator: 'vodacom',
        currency: 'CDF',
        created: Date.now(),
      });
      expect(status).to.deep.include({ state: 'failed', failureCode: ours });
    });
  }

  it('payouts: success, RECIPIENT_NOT_FOUND and UNSPECIFIED_FAILURE', async () => {
    const outcomes: Record<string, [string, string | null]> = {
      '789': ['succeeded', null],
      '089': ['failed', 'payer-not-found'],
      '119': ['failed', 'provider-failed'],
    };
    for (const [tail, [state, code]] of Object.entries(outcomes)) {
      const uuid = randomUUID();
      expect(
        await connector.payout({
          payoutId: `po_${uuid}`,
          operator: 'orange',
          amount: 2500,
          currency: 'USD',
          msisdn: phone('orange', tail),
          description: null,
        }),
      ).to.deep.equal({ providerRef: uuid });
      const cb = await verifiedCallback(uuid);
      expect(cb, tail).to.deep.include({
        kind: 'payout',
        objectId: `po_${uuid}`,
        status: state,
        failureCode: code,
        amount: 2500,
        currency: 'USD',
      });
    }
  });

  it('a partial refund, then a full one, then one too many (refused by pawaPay, permanent)', async () => {
    const { uuid } = await pay('orange', phone('orange', '789'), 100000);
    await verifiedCallback(uuid);
    const refund = (amount: number) => {
      const id = randomUUID();
      return {
        id,
        p: connector.refund({
          refundId: `re_${id}`,
          paymentId: `pay_${uuid}`,
          paymentProviderRef: uuid,
          paymentAmount: 100000,
          operator: 'orange',
          amount,
          currency: 'CDF',
          msisdn: phone('orange', '789'),
          description: null,
        }),
      };
    };
    const first = refund(30050);
    expect(await first.p).to.deep.equal({ providerRef: first.id });
    expect(client.sent.at(-1)!.body).to.deep.equal({
      refundId: first.id,
      depositId: uuid,
      amount: '300.5',
      currency: 'CDF',
    });
    expect(await verifiedCallback(first.id)).to.deep.include({
      kind: 'refund',
      objectId: `re_${first.id}`,
      status: 'succeeded',
      amount: 30050,
    });
    const rest = refund(69950);
    await rest.p;
    expect(await verifiedCallback(rest.id)).to.deep.include({ status: 'succeeded', amount: 69950 });
    const tooMuch = refund(1000);
    const err = await rejection(tooMuch.p);
    expect(err.retryable).to.equal(false);
    expect(err.code).to.equal('amount-out-of-bounds');
    const refunds = sim.transactions().filter((t) => t.kind === 'refund' && t.depositId === uuid);
    expect(refunds.map((t) => t.status)).to.deep.equal(['COMPLETED', 'COMPLETED']);
  });

  it('a refund of a payment to a payout-failure number fails (RECIPIENT_NOT_FOUND)', async () => {
    const { uuid } = await pay('vodacom', phone('vodacom', '089'));
    await verifiedCallback(uuid);
    const id = randomUUID();
    await connector.refund({
      refundId: `re_${id}`,
      paymentId: `pay_${uuid}`,
      paymentProviderRef: null,
      paymentAmount: 150000,
      operator: 'vodacom',
      amount: 150000,
      currency: 'CDF',
      msisdn: phone('vodacom', '089'),
      description: null,
    });
    expect(await verifiedCallback(id)).to.deep.include({ status: 'failed', failureCode: 'payer-not-found' });
  });

  it('…129 stays SUBMITTED with no callback: asked, it is pending', async () => {
    const { uuid } = await pay('vodacom', phone('vodacom', '129'));
    await sleep(400);
    expect(
      await connector.ask({
        kind: 'payment',
        id: `pay_${uuid}`,
        providerRef: uuid,
        operator: 'vodacom',
        currency: 'CDF',
        created: Date.now(),
      }),
    ).to.deep.equal({ state: 'pending', providerRef: uuid });
    expect(simTx(uuid).status).to.equal('SUBMITTED');
    expect(callbacksOf(uuid)).to.have.length(0);
  });

  it('…201 goes IN_RECONCILIATION (pending) and then COMPLETED', async () => {
    const { uuid } = await pay('airtel', phone('airtel', '201'));
    const op = {
      kind: 'payment' as const,
      id: `pay_${uuid}`,
      providerRef: uuid,
      operator: 'airtel' as const,
      currency: 'CDF' as const,
      created: Date.now(),
    };
    await until('IN_RECONCILIATION', () => simTx(uuid).status === 'IN_RECONCILIATION');
    expect((await connector.ask(op)).state).to.equal('pending');
    expect(await verifiedCallback(uuid)).to.deep.include({ status: 'succeeded' });
    expect((await connector.ask(op)).state).to.equal('succeeded');
  });

  it('…202 sends its callback twice: both verify and normalise to the same event id', async () => {
    const { uuid } = await pay('orange', phone('orange', '202'));
    const a = (await verifiedCallback(uuid, 0)) as NormalisedCallback;
    const b = (await verifiedCallback(uuid, 1)) as NormalisedCallback;
    expect(b).to.deep.equal(a);
    await until('the simulator counting two callbacks', () => simTx(uuid).callbacksSent === 2);
  });

  it('…203 sends the final callback, then a stale PROCESSING one (out of order): that one decides nothing', async () => {
    const { uuid } = await pay('vodacom', phone('vodacom', '203'));
    expect(await verifiedCallback(uuid, 0)).to.deep.include({ status: 'succeeded' });
    expect(await verifiedCallback(uuid, 1)).to.equal('ignore');
  });

  it('…204 answers HTTP 500 (UNKNOWN_ERROR) but created it: the status query finds it, accepted, no resend', async () => {
    const { uuid, accepted } = await pay('airtel', phone('airtel', '204'));
    expect(accepted).to.deep.equal({ providerRef: uuid });
    expect(initiationsSent(uuid)).to.equal(1);
    expect(client.sent.filter((s) => s.method === 'GET' && s.path === `/v2/deposits/${uuid}`)).to.have.length(1);
    expect(simTx(uuid).initiations).to.equal(1);
    expect(await verifiedCallback(uuid)).to.deep.include({ status: 'succeeded' });
  });

  it('…205 answers after the timeout: the status query finds it, accepted, no resend', async () => {
    const { uuid, accepted } = await pay('orange', phone('orange', '205'));
    expect(accepted).to.deep.equal({ providerRef: uuid });
    expect(initiationsSent(uuid)).to.equal(1);
    expect(simTx(uuid).initiations).to.equal(1);
  });

  it('…207 answers HTTP 500 and did not create it: not found, resent under the same id, accepted once', async () => {
    const { uuid, accepted } = await pay('vodacom', phone('vodacom', '207'));
    expect(accepted).to.deep.equal({ providerRef: uuid });
    expect(initiationsSent(uuid)).to.equal(2);
    const bodies = client.sent
      .filter((s) => s.method === 'POST' && (s.body as { depositId?: string }).depositId === uuid)
      .map((s) => s.body);
    expect(bodies[1]).to.deep.equal(bodies[0]);
    expect(simTx(uuid).initiations).to.equal(1);
    expect(await verifiedCallback(uuid)).to.deep.include({ status: 'succeeded' });
  });

  it('…206 stays open with no callback until its status is asked', async () => {
    const { uuid } = await pay('airtel', phone('airtel', '206'));
    await sleep(400);
    expect(simTx(uuid).status).to.equal('PROCESSING');
    expect(callbacksOf(uuid)).to.have.length(0);
    expect(
      (
        await connector.ask({
          kind: 'payment',
          id: `pay_${uuid}`,
          providerRef: uuid,
          operator: 'airtel',
          currency: 'CDF',
          created: Date.now(),
        })
      ).state,
    ).to.equal('succeeded');
    expect(await verifiedCallback(uuid)).to.deep.include({ status: 'succeeded' });
  });

  it('a payment sent again (a retry after a crash) is DUPLICATE_IGNORED: accepted, one transaction, two initiations', async () => {
    const uuid = randomUUID();
    const req = {
      paymentId: `pay_${uuid}`,
      operator: 'vodacom' as const,
      amount: 100000,
      currency: 'CDF' as const,
      msisdn: phone('vodacom', '789'),
      description: null,
    };
    expect(await connector.push(req)).to.deep.equal({ providerRef: uuid });
    expect(await connector.push(req)).to.deep.equal({ providerRef: uuid });
    expect(sim.transactions().filter((t) => t.id === uuid)).to.have.length(1);
    expect(simTx(uuid).initiations).to.equal(2);
  });

  it('an amount the operator cannot carry is refused before any request leaves', async () => {
    const before = client.sent.length;
    // VODACOM_MPESA_COD takes no decimals in CDF
    const decimals = await rejection(
      connector.push({
        paymentId: `pay_${randomUUID()}`,
        operator: 'vodacom',
        amount: 100050,
        currency: 'CDF',
        msisdn: phone('vodacom', '789'),
        description: null,
      }),
    );
    expect(decimals).to.deep.include({ retryable: false, code: 'amount-not-supported' });
    expect(decimals.message).to.contain('0 decimals');
    // below active-conf's minimum (500 CDF)
    const small = await rejection(
      connector.push({
        paymentId: `pay_${randomUUID()}`,
        operator: 'vodacom',
        amount: 40000,
        currency: 'CDF',
        msisdn: phone('vodacom', '789'),
        description: null,
      }),
    );
    expect(small.code).to.equal('amount-not-supported');
    const africell = await rejection(
      connector.push({
        paymentId: `pay_${randomUUID()}`,
        operator: 'africell',
        amount: 100000,
        currency: 'CDF',
        msisdn: '243903456789',
        description: null,
      }),
    );
    expect(africell.code).to.equal('operator-unavailable');
    expect(client.sent.length).to.equal(before);
  });

  it('the simulator refuses what pawaPay would: a phone of another provider, too many decimals, a trailing zero, an unknown field', async () => {
    // Airtel's number sent as Vodacom's: INVALID_PHONE_NUMBER (200 REJECTED), permanent
    const wrongPhone = randomUUID();
    meantInvalid.add(wrongPhone);
    const e1 = await rejection(
      connector.push({
        paymentId: `pay_${wrongPhone}`,
        operator: 'vodacom',
        amount: 100000,
        currency: 'CDF',
        msisdn: phone('airtel', '789'),
        description: null,
      }),
    );
    expect(e1).to.deep.include({ retryable: false, code: 'provider-refused' });
    expect(e1.message).to.contain('INVALID_PHONE_NUMBER');
    // a connector whose rules are the defaults, sent raw to see the simulator's own refusals
    const raw = async (body: unknown) => {
      const res = await client.request(`${sim.url}/v2/deposits`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        timeoutMs: 2000,
      });
      return { status: res.status, body: JSON.parse(res.body.toString()) };
    };
    const base = (id: string) => ({
      depositId: id,
      amount: '1000',
      currency: 'CDF',
      payer: { type: 'MMO', accountDetails: { phoneNumber: phone('vodacom', '789'), provider: 'VODACOM_MPESA_COD' } },
    });
    const ids: string[] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    ids.forEach((id) => meantInvalid.add(id));
    expect(await raw({ ...base(ids[0]), amount: '1000.5' })).to.deep.include({
      status: 200,
      body: {
        depositId: ids[0],
        status: 'REJECTED',
        failureReason: {
          failureCode: 'INVALID_AMOUNT',
          failureMessage: 'The number of decimal places specified in the amount is not supported by the provider.',
        },
      },
    });
    expect((await raw({ ...base(ids[1]), amount: '1000.50' })).body.failureReason.failureCode).to.equal(
      'INVALID_PARAMETER',
    );
    expect(await raw({ ...base(ids[2]), note: 'x' })).to.have.nested.property(
      'body.failureReason.failureCode',
      'UNSUPPORTED_PARAMETER',
    );
    const missing: Record<string, unknown> = base(ids[3]);
    delete missing.currency;
    expect(await raw(missing)).to.deep.include({ status: 400 });
    expect(sim.transactions().filter((t) => ids.includes(t.id))).to.have.length(0);
  });

  it('a refused token: retryable, and the token is in no error message', async () => {
    const bad = make({ apiToken: 'wrong-secret-token-123' });
    const uuid = randomUUID();
    const err = await rejection(
      bad.push({
        paymentId: `pay_${uuid}`,
        operator: 'airtel',
        amount: 100000,
        currency: 'CDF',
        msisdn: phone('airtel', '789'),
        description: null,
      }),
    );
    expect(err).to.deep.include({ retryable: true, code: 'provider-auth' });
    expect(err.message).to.not.contain('wrong-secret-token-123');
    const askErr = await rejection(
      bad.ask({
        kind: 'payment',
        id: `pay_${uuid}`,
        providerRef: null,
        operator: 'airtel',
        currency: 'CDF',
        created: Date.now(),
      }),
    );
    expect(askErr.retryable).to.equal(true);
    expect(sim.refusals().AUTHENTICATION_ERROR).to.be.greaterThan(0);
    expect(sim.transactions().find((t) => t.id === uuid)).to.equal(undefined);
    // no token at all: 401 NO_AUTHENTICATION
    const res = await client.request(`${sim.url}/v2/deposits/${uuid}`, { method: 'GET', timeoutMs: 2000 });
    expect(res.status).to.equal(401);
    expect(JSON.parse(res.body.toString()).failureReason.failureCode).to.equal('NO_AUTHENTICATION');
  });

  it('an unreachable pawaPay: unknown outcome, the status query unknown too: retryable, never a failure', async () => {
    // a loopback port nothing listens on any more
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const freed = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const down = make({ baseUrl: `http://127.0.0.1:${freed}` });
    const err = await rejection(
      down.push({
        paymentId: `pay_${randomUUID()}`,
        operator: 'airtel',
        amount: 100000,
        currency: 'CDF',
        msisdn: phone('airtel', '789'),
        description: null,
      }),
    );
    expect(err).to.deep.include({ retryable: true, code: 'provider-unknown-outcome' });
  });

  it('asks about an id pawaPay never saw: not_found', async () => {
    const uuid = randomUUID();
    expect(
      await connector.ask({
        kind: 'payout',
        id: `po_${uuid}`,
        providerRef: null,
        operator: 'orange',
        currency: 'USD',
        created: Date.now(),
      }),
    ).to.deep.equal({ state: 'not_found' });
  });

  it('forged, altered, stale, unsigned and replayed-late callbacks are invalid; a rotated key is fetched again', async () => {
    const { uuid } = await pay('vodacom', phone('vodacom', '789'));
    const cb = await until('callback', () => callbacksOf(uuid)[0]);
    const now = Math.floor(Date.now() / 1000);
    const verify = (raw: Buffer, headers: http.IncomingHttpHeaders, nowUnix = now) =>
      connector.verifyCallback({ raw, headers, ip: '127.0.0.1', nowUnix });
    expect(await verify(cb.raw, cb.headers)).to.equal('verified');
    const altered = Buffer.from(cb.raw.toString().replace('"1500.00"', '"15000.00"'));
    expect(altered.equals(cb.raw)).to.equal(false);
    expect(await verify(altered, cb.headers)).to.equal('invalid');
    const sig = String(cb.headers.signature);
    const flipped = sig.replace(/:(.)/, (_m: string, c: string) => `:${c === 'A' ? 'B' : 'A'}`);
    expect(flipped).to.not.equal(sig);
    expect(await verify(cb.raw, { ...cb.headers, signature: flipped })).to.equal('invalid');
    expect(await verify(cb.raw, cb.headers, now + 400)).to.equal('invalid');
    const { signature: _s, 'signature-input': _i, ...unsigned } = cb.headers;
    expect(await verify(cb.raw, unsigned)).to.equal('invalid');
    expect(
      await make({ callbackSignatures: 'off' }).verifyCallback({
        raw: cb.raw,
        headers: unsigned,
        ip: '127.0.0.1',
        nowUnix: now,
      }),
    ).to.equal('unsigned');
    // pawaPay rotates its key: the next callback names an unknown keyid, the keys are fetched again
    const oldKey = sim.keyId();
    sim.rotateKey();
    expect(sim.keyId()).to.not.equal(oldKey);
    const next = await pay('vodacom', phone('vodacom', '789'));
    expect(await verifiedCallback(next.uuid)).to.deep.include({ status: 'succeeded' });
    // the old signature's key is no longer published
    expect(await verify(cb.raw, cb.headers)).to.equal('invalid');
  });

  it('availability: CLOSED closed, DELAYED delayed; a payout while DELAYED waits ENQUEUED (pending), then completes', async () => {
    sim.setAvailability('AIRTEL_COD', 'DEPOSIT', 'CLOSED');
    sim.setAvailability('VODACOM_MPESA_COD', 'PAYOUT', 'DELAYED');
    try {
      const availability = await connector.availability();
      expect(availability.airtel).to.deep.equal({ collection: 'closed', payout: 'operational', refund: 'operational' });
      expect(availability.vodacom?.payout).to.equal('delayed');
      expect(availability.orange?.collection).to.equal('operational');
      expect(availability.africell).to.equal(undefined);
      const closed = await rejection(pay('airtel', phone('airtel', '789')));
      expect(closed).to.deep.include({ retryable: false, code: 'operator-unavailable' });
      const uuid = randomUUID();
      await connector.payout({
        payoutId: `po_${uuid}`,
        operator: 'vodacom',
        amount: 200000,
        currency: 'CDF',
        msisdn: phone('vodacom', '789'),
        description: 'Salary',
      });
      const op = {
        kind: 'payout' as const,
        id: `po_${uuid}`,
        providerRef: uuid,
        operator: 'vodacom' as const,
        currency: 'CDF' as const,
        created: Date.now(),
      };
      await sleep(300);
      expect(simTx(uuid).status).to.equal('ENQUEUED');
      expect(await connector.ask(op)).to.deep.equal({ state: 'pending', providerRef: uuid });
      sim.setAvailability('VODACOM_MPESA_COD', 'PAYOUT', 'OPERATIONAL');
      expect(await verifiedCallback(uuid)).to.deep.include({ kind: 'payout', status: 'succeeded', amount: 200000 });
    } finally {
      sim.setAvailability('AIRTEL_COD', 'DEPOSIT', 'OPERATIONAL');
      sim.setAvailability('VODACOM_MPESA_COD', 'PAYOUT', 'OPERATIONAL');
    }
  });

  it('reads active-conf and availability served with operationTypes as arrays too', async () => {
    const arraySim = await startPawapaySimulator({ token: TOKEN, callbackUrl: null, operationTypesShape: 'array' });
    const c = make({ baseUrl: arraySim.url });
    try {
      expect(await c.refreshActiveConf()).to.equal(true);
      expect(c.capabilities.amountRule('orange', 'USD', 'refund')).to.deep.equal({ decimals: 2, min: 10, max: 250000 });
      arraySim.setAvailability('ORANGE_COD', 'REFUND', 'CLOSED');
      expect((await c.availability()).orange).to.deep.equal({
        collection: 'operational',
        payout: 'operational',
        refund: 'closed',
      });
    } finally {
      await arraySim.close();
    }
  });

  it('the inspection endpoint lists each transaction with its final state and initiations (the chaos agreement row)', async () => {
    const res = await client.request(`${sim.url}/_sim/transactions`, { method: 'GET', timeoutMs: 2000 });
    const list = JSON.parse(res.body.toString()) as { id: string; status: string; initiations: number }[];
    expect(list.length).to.equal(sim.transactions().length);
    for (const t of list) {
      expect(t.initiations, t.id).to.be.at.least(1);
      expect(t.status).to.be.a('string');
    }
  });

  it("refreshes active-conf on an unref'd timer until close()", async () => {
    const count = () => client.sent.filter((s) => s.path === '/v2/active-conf').length;
    const before = count();
    const timed = make({ activeConfRefreshMs: 100 });
    await until('two active-conf fetches', () => count() >= before + 2, 3000);
    expect(timed.activeConfReady).to.equal(true);
    timed.close();
    await sleep(50);
    const stopped = count();
    await sleep(300);
    expect(count()).to.equal(stopped);
  });

  it('logs no token and no full phone number', () => {
    expect(logs.length).to.be.greaterThan(10);
    const all = logs.join('\n');
    expect(all).to.not.contain(TOKEN);
    expect(all).to.not.contain('wrong-secret-token-123');
    expect(all).to.not.match(/243\d{9}/);
    expect(all).to.match(/243\*{5}\d{4}/);
  });

  it('parseCallback refuses what is not a pawaPay callback', () => {
    expect(() => connector.parseCallback(Buffer.from('not json'), {})).to.throw('not JSON');
    expect(() => connector.parseCallback(Buffer.from('{"status":"COMPLETED"}'), {})).to.throw('pawaPay callback');
    const id = randomUUID();
    expect(() =>
      connector.parseCallback(
        Buffer.from(JSON.stringify({ depositId: id, status: 'COMPLETED', amount: '1.001', currency: 'USD' })),
        {},
      ),
    ).to.throw();
    expect(() =>
      connector.parseCallback(
        Buffer.from(JSON.stringify({ depositId: id, status: 'COMPLETED', amount: '1', currency: 'XAF' })),
        {},
      ),
    ).to.throw('not one of ours');
    expect(connector.parseCallback(Buffer.from(JSON.stringify({ depositId: id, status: 'ACCEPTED' })), {})).to.equal(
      'ignore',
    );
    expect(connector.callbackAnswer()).to.deep.equal({ status: 200 });
  });
});
