import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpClient } from '../../shared/httpClient';
import { AirtelConnector, type AirtelConnectorOptions } from '../../shared/providers/airtel/connector';
import { check } from '../../shared/providers/airtel/schema';
import {
  startAirtelSimulator,
  type AirtelSimulator,
  type AirtelSimulatorOptions,
} from '../../scripts/simulators/airtel/simulator';
import type { NormalisedCallback, Verification } from '../../shared/providers/connector';
import { ProviderError } from '../../shared/providers/errors';

/**
 * The Airtel connector against its simulator over loopback (random ports): every scenario of
 * the test-number table, the contract (every request the connector sends conforms to the JSON
 * Schemas, and the simulator refuses what Airtel refuses), tokens, unknown outcomes, repeated ids.
 */

const SECRET = 'sim-callback-key';
const PIN = '2468';

interface Received {
  raw: Buffer;
  verification: Verification;
  parsed: NormalisedCallback | 'ignore' | Error;
  at: number;
}

/** A callback endpoint that verifies and parses with the connector, as the service's route will. */
async function callbackReceiver(connector: () => AirtelConnector) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      const c = connector();
      const verification = await c.verifyCallback({
        raw,
        headers: req.headers,
        ip: '127.0.0.1',
        nowUnix: Math.floor(Date.now() / 1000),
      });
      let parsed: Received['parsed'];
      try {
        parsed = c.parseCallback(raw, req.headers);
      } catch (err) {
        parsed = err as Error;
      }
      received.push({ raw, verification, parsed, at: Date.now() });
      const answer = verification === 'invalid' ? { status: 401 } : c.callbackAnswer();
      res.writeHead(answer.status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callbacks/airtel`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function waitFor<T>(fn: () => T | undefined | false, timeoutMs = 5_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function rejection(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(ProviderError);
    return err as ProviderError;
  }
  throw new Error('expected a ProviderError');
}

const push = (msisdn: string, amount = 1050, currency: 'USD' | 'CDF' = 'USD', paymentId = `pay_${randomUUID()}`) => ({
  paymentId,
  operator: 'airtel' as const,
  amount,
  currency,
  msisdn,
  description: 'Order 42',
});
const payout = (msisdn: string, amount = 2500) => ({
  payoutId: `po_${randomUUID()}`,
  operator: 'airtel' as const,
  amount,
  currency: 'USD' as const,
  msisdn,
  description: 'Salary',
});
const opRef = (kind: 'payment' | 'payout' | 'refund', id: string, providerRef: string | null = null) => ({
  kind,
  id,
  providerRef,
  operator: 'airtel' as const,
  currency: 'USD' as const,
  created: Date.now(),
});

describe('airtel connector against the simulator', function () {
  this.timeout(20_000);
  let sim: AirtelSimulator;
  let client: HttpClient;
  let receiver: Awaited<ReturnType<typeof callbackReceiver>>;
  let connector: AirtelConnector;
  const connectors: AirtelConnector[] = [];

  const make = (extra: Partial<AirtelConnectorOptions> = {}) => {
    const c = new AirtelConnector({
      environment: 'live',
      baseUrl: sim.url,
      clientId: 'sim-client-id',
      clientSecret: 'sim-client-secret',
      disbursementPin: PIN,
      pinPublicKeyPem: sim.publicKeyPem,
      callbackHashSecret: SECRET,
      timeoutMs: 2_000,
      client,
      ...extra,
    });
    connectors.push(c);
    return c;
  };

  const simOptions = (): AirtelSimulatorOptions => ({
    callbackUrl: receiver.url,
    callbackHashSecret: SECRET,
    callbackDelayMs: 30,
    finalAfterMs: 100,
    slowInitiationMs: 1_500,
    pin: PIN,
  });

  before(async () => {
    client = new HttpClient(32);
    receiver = await callbackReceiver(() => connector);
    sim = await startAirtelSimulator(simOptions());
    connector = make();
  });

  after(async () => {
    for (const c of connectors) c.close();
    await sim.close();
    await receiver.close();
    client.close();
  });

  afterEach(function () {
    // the contract: every request any connector sent to this simulator conforms to Airtel's schemas
    const bad = sim.requests().filter((r) => r.problems.length > 0);
    expect(bad, `${this.currentTest?.title}`).to.deep.equal([]);
  });

  const callbacksFor = (airtelMoneyIdOrObject: string) =>
    receiver.received.filter(
      (r) => r.parsed !== 'ignore' && !(r.parsed instanceof Error) && r.parsed.objectId === airtelMoneyIdOrObject,
    );
  const simTx = (id: string) => sim.transactions().find((t) => t.id === id);
  const compact = (ourId: string) =>
    `${ourId.startsWith('pay_') ? 'P' : ourId.startsWith('po_') ? 'O' : 'R'}${ourId.slice(ourId.indexOf('_') + 1).replace(/-/g, '')}`;

  describe('collections', () => {
    it('a successful payment: push, a verified callback, the enquiry; exact amount and national number on the wire', async () => {
      const req = push('243970000001', 1050);
      const accepted = await connector.push(req);
      expect(accepted.providerRef).to.equal(compact(req.paymentId));
      const [cb] = await waitFor(() => callbacksFor(req.paymentId).length > 0 && callbacksFor(req.paymentId));
      expect(cb.verification).to.equal('verified');
      const t = simTx(compact(req.paymentId))!;
      expect(t).to.deep.include({ msisdn: '970000001', amount: '10.5', currency: 'USD', status: 'TS', initiations: 1 });
      expect(cb.parsed).to.deep.include({
        kind: 'payment',
        objectId: req.paymentId,
        status: 'succeeded',
        providerRef: t.airtelMoneyId,
      });
      expect(await connector.ask(opRef('payment', req.paymentId, accepted.providerRef))).to.deep.equal({
        state: 'succeeded',
        providerRef: t.airtelMoneyId,
      });
    });

    it('carries CDF amounts exactly', async () => {
      const req = push('243970000001', 1_234_567, 'CDF');
      await connector.push(req);
      expect(simTx(compact(req.paymentId))).to.deep.include({ amount: '12345.67', currency: 'CDF' });
    });

    const failures: [string, string, string][] = [
      ['243970000002', 'DP00800001007', 'insufficient-funds'],
      ['243970000003', 'DP00800001002', 'client-refused'],
      ['243970000004', 'DP00800001003', 'limit-reached'],
      ['243970000005', 'DP00800001005', 'client-timeout'],
      ['243970000006', 'DP00800001008', 'provider-refused'],
      ['243970000007', 'DP00800001010', 'wallet-limited'],
      ['243970000008', 'DP00800001024', 'client-timeout'],
      ['243970000010', 'DP00800001009', 'provider-refused'],
      ['243970000011', 'DP00800001004', 'amount-out-of-bounds'],
    ];
    for (const [msisdn, code, ours] of failures) {
      it(`${msisdn} fails with ${code}, mapped to ${ours}, by enquiry and by a verified callback`, async () => {
        const req = push(msisdn);
        await connector.push(req);
        const [cb] = await waitFor(() => callbacksFor(req.paymentId).length > 0 && callbacksFor(req.paymentId));
        expect(cb.verification).to.equal('verified');
        expect(cb.parsed).to.deep.include({ status: 'failed', failureCode: 'provider-failed' });
        const status = await connector.ask(opRef('payment', req.paymentId));
        expect(status).to.deep.include({ state: 'failed', failureCode: ours });
        expect(simTx(compact(req.paymentId))).to.deep.include({ status: 'TF', responseCode: code });
      });
    }

    it('243970000009 expires (TE): expired, no callback', async () => {
      const req = push('243970000009');
      await connector.push(req);
      await sleep(250);
      expect(await connector.ask(opRef('payment', req.paymentId))).to.deep.include({ state: 'expired' });
      expect(callbacksFor(req.paymentId)).to.have.length(0);
    });

    it('243970000020 stays pending until asked: no callback before, success and a callback after', async () => {
      const req = push('243970000020');
      await connector.push(req);
      await sleep(300);
      expect(callbacksFor(req.paymentId)).to.have.length(0);
      expect(simTx(compact(req.paymentId))!.status).to.equal('TIP');
      expect(await connector.ask(opRef('payment', req.paymentId))).to.deep.include({ state: 'succeeded' });
      await waitFor(() => callbacksFor(req.paymentId).length === 1);
    });

    it('243970000021 answers TIP first (pending), then succeeds', async () => {
      const req = push('243970000021');
      await connector.push(req);
      expect(await connector.ask(opRef('payment', req.paymentId))).to.deep.equal({
        state: 'pending',
        providerRef: simTx(compact(req.paymentId))!.airtelMoneyId,
      });
      await waitFor(() => callbacksFor(req.paymentId).length === 1);
      expect(await connector.ask(opRef('payment', req.paymentId))).to.deep.include({ state: 'succeeded' });
    });

    it('243970000022 answers TA (ambiguous) first: kept open, then succeeds', async () => {
      const req = push('243970000022');
      await connector.push(req);
      expect(await connector.ask(opRef('payment', req.paymentId))).to.deep.include({ state: 'pending' });
      await waitFor(() => callbacksFor(req.paymentId).length === 1);
      expect(await connector.ask(opRef('payment', req.paymentId))).to.deep.include({ state: 'succeeded' });
    });

    it('243970000030 sends its callback twice: both verified, one event id', async () => {
      const req = push('243970000030');
      await connector.push(req);
      const cbs = await waitFor(() => callbacksFor(req.paymentId).length === 2 && callbacksFor(req.paymentId));
      expect(cbs.map((c) => c.verification)).to.deep.equal(['verified', 'verified']);
      const ids = cbs.map((c) => (c.parsed as NormalisedCallback).eventId);
      expect(ids[0]).to.equal(ids[1]);
    });

    it('243970000031 calls back before the initiation is answered', async () => {
      const req = push('243970000031');
      await connector.push(req);
      const answeredAt = Date.now();
      const [cb] = callbacksFor(req.paymentId);
      expect(cb, 'callback already received').to.not.equal(undefined);
      expect(cb.at).to.be.lessThan(answeredAt);
      expect(cb.parsed).to.deep.include({ status: 'succeeded' });
    });
  });

  describe('unknown outcomes: ask first, never charge twice', () => {
    it('243970000040: a 500 that still created the transaction is found by the enquiry; one initiation', async () => {
      const req = push('243970000040');
      const before = sim.requests().length;
      const accepted = await connector.push(req);
      expect(accepted.providerRef).to.be.a('string');
      expect(simTx(compact(req.paymentId))).to.deep.include({ initiations: 1 });
      const sent = sim
        .requests()
        .slice(before)
        .map((r) => `${r.method} ${r.status}`);
      expect(sent).to.deep.equal(['POST 500', 'GET 200']);
      await waitFor(() => simTx(compact(req.paymentId))!.status === 'TS');
    });

    it('243970000043: a 500 that created nothing: enquiry says not found, one resend with the same id', async () => {
      const req = push('243970000043');
      const before = sim.requests().length;
      await connector.push(req);
      const sent = sim
        .requests()
        .slice(before)
        .map((r) => `${r.method} ${r.path.split('/').pop()} ${r.status}`);
      expect(sent).to.deep.equal([`POST  500`, `GET ${compact(req.paymentId)} 404`, `POST  200`]);
      expect(simTx(compact(req.paymentId))).to.deep.include({ initiations: 1 });
    });

    it('243970000041: an initiation answered too late (timeout) is found by the enquiry; not sent again', async () => {
      const c = make({ timeoutMs: 500 });
      const req = push('243970000041');
      const accepted = await c.push(req);
      expect(accepted.providerRef).to.be.a('string');
      expect(simTx(compact(req.paymentId))).to.deep.include({ initiations: 1 });
      await sleep(1_200);
    });

    it('243970000023: a 500, then enquiries answering TA with airtel_money_id null: kept open, never sent again', async () => {
      const req = push('243970000023');
      const before = sim.requests().length;
      const accepted = await connector.push(req);
      expect(accepted.providerRef).to.equal(compact(req.paymentId));
      expect(await connector.ask(opRef('payment', req.paymentId))).to.deep.equal({
        state: 'pending',
        providerRef: null,
      });
      const t = simTx(compact(req.paymentId))!;
      expect(await connector.ask(opRef('payment', req.paymentId))).to.deep.equal({
        state: 'succeeded',
        providerRef: t.airtelMoneyId,
      });
      const posts = sim
        .requests()
        .slice(before)
        .filter((r) => r.method === 'POST' && r.path === '/merchant/v1/payments/');
      expect(posts.map((r) => r.status)).to.deep.equal([500]);
      expect(simTx(compact(req.paymentId))).to.deep.include({ initiations: 1, enquiries: 3, status: 'TS' });
    });

    it('a payout answered 500, then TA with airtel_money_id null: kept open, the PIN never sent again', async () => {
      const req = payout('243970000023');
      const before = sim.requests().length;
      const accepted = await connector.payout(req);
      expect(accepted.providerRef).to.equal(compact(req.payoutId));
      expect(await connector.ask(opRef('payout', req.payoutId))).to.deep.equal({ state: 'pending', providerRef: null });
      expect(await connector.ask(opRef('payout', req.payoutId))).to.deep.include({ state: 'succeeded' });
      const posts = sim
        .requests()
        .slice(before)
        .filter((r) => r.method === 'POST' && r.path === '/standard/v2/disbursements/');
      expect(posts.map((r) => r.status)).to.deep.equal([500]);
      expect(simTx(compact(req.payoutId))).to.deep.include({ initiations: 1, enquiries: 3, status: 'TS' });
    });

    it('when Airtel cannot be reached at all, the outcome stays unknown: a retryable error, nothing failed', async () => {
      const dead = new AirtelConnector({
        environment: 'live',
        baseUrl: 'http://127.0.0.1:9',
        clientId: 'a',
        clientSecret: 'b',
        client,
        timeoutMs: 300,
      });
      const err = await rejection(dead.push(push('243970000001')));
      expect(err.retryable).to.equal(true);
    });

    it('a repeated payment id is refused by Airtel, and the connector asks instead of resending', async () => {
      const req = push('243970000001');
      const first = await connector.push(req);
      const again = await connector.push(req);
      expect(again.providerRef).to.be.a('string');
      expect(first.providerRef).to.equal(compact(req.paymentId));
      const t = simTx(compact(req.paymentId))!;
      expect(t.initiations).to.equal(2); // the refused repeat, counted; one transaction
      expect(sim.transactions().filter((x) => x.id === t.id)).to.have.length(1);
    });

    it('a repeated id of a failed payment is followed to its failure', async () => {
      const req = push('243970000002');
      await connector.push(req);
      await waitFor(() => simTx(compact(req.paymentId))!.status === 'TF');
      const err = await rejection(connector.push(req));
      expect(err.retryable).to.equal(false);
      expect(err.code).to.equal('insufficient-funds');
    });
  });

  describe('tokens', () => {
    it('10 concurrent calls on a fresh connector share one token request', async () => {
      const c = make();
      const before = sim.tokenRequests();
      await Promise.all(Array.from({ length: 10 }, () => c.push(push('243970000001', 100))));
      expect(sim.tokenRequests() - before).to.equal(1);
    });

    it('reuses its token until a margin before expiry, then refreshes', async () => {
      const s = await startAirtelSimulator({ ...simOptions(), tokenLifetimeS: 2 });
      try {
        const c = make({ baseUrl: s.url, pinPublicKeyPem: s.publicKeyPem, tokenMarginMs: 500 });
        await c.push(push('243970000001', 100));
        await c.push(push('243970000001', 100));
        expect(s.tokenRequests()).to.equal(1);
        await sleep(1_600);
        await c.push(push('243970000001', 100));
        expect(s.tokenRequests()).to.equal(2);
        expect(s.requests().filter((r) => r.status === 401)).to.have.length(0);
      } finally {
        await s.close();
      }
    });

    it('243970000042: the token expires mid-run; the next call gets a 401, refreshes once and retries once', async () => {
      const c = make();
      const req = push('243970000042');
      await c.push(req);
      const tokens = sim.tokenRequests();
      const before = sim.requests().length;
      expect(await c.ask(opRef('payment', req.paymentId))).to.have.property('state');
      expect(sim.tokenRequests()).to.equal(tokens + 1);
      expect(
        sim
          .requests()
          .slice(before)
          .map((r) => `${r.method} ${r.path.startsWith('/auth') ? 'token' : 'enquiry'} ${r.status}`),
      ).to.deep.equal(['GET enquiry 401', 'POST token 200', 'GET enquiry 200']);
    });

    it('a token that keeps being refused: one refresh, one retry, then a retryable error', async () => {
      let tokenCalls = 0;
      let apiCalls = 0;
      const server = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          if (req.url === '/auth/oauth2/token') {
            tokenCalls += 1;
            res
              .writeHead(200, { 'Content-Type': 'application/json' })
              .end(JSON.stringify({ access_token: `t${tokenCalls}`, expires_in: '180', token_type: 'bearer' }));
          } else {
            apiCalls += 1;
            res.writeHead(401, { 'Content-Type': 'application/json' }).end('{"error":"invalid_token"}');
          }
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      try {
        const c = new AirtelConnector({
          environment: 'live',
          baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          clientId: 'a',
          clientSecret: 'b',
          client,
        });
        const err = await rejection(c.ask(opRef('payment', `pay_${randomUUID()}`)));
        expect(err.retryable).to.equal(true);
        expect(err.code).to.equal('provider-auth');
        expect([tokenCalls, apiCalls]).to.deep.equal([2, 2]);
        expect(err.message).not.to.match(/t1|t2/);
      } finally {
        await new Promise<void>((r) => server.close(() => r()));
      }
    });

    it('wrong client credentials: a retryable error that names no secret', async () => {
      const c = make({ clientSecret: 'wrong-secret-value' });
      const err = await rejection(c.push(push('243970000001')));
      expect(err.retryable).to.equal(true);
      expect(err.code).to.equal('provider-auth');
      expect(err.message).not.to.include('wrong-secret-value');
    });
  });

  describe('echoes and secrets', () => {
    it('reads an echoed amount exactly when the enquiry carries one', async () => {
      const s = await startAirtelSimulator({ ...simOptions(), callbackUrl: null, enquiryEchoesAmount: true });
      try {
        const c = make({ baseUrl: s.url, pinPublicKeyPem: s.publicKeyPem, amountRules: { USD: { max: null } } });
        const req = push('243970000001', 1_000_001);
        await c.push(req);
        await waitFor(() => s.transactions()[0]?.status === 'TS');
        expect(await c.ask(opRef('payment', req.paymentId))).to.deep.include({
          state: 'succeeded',
          amount: 1_000_001,
          currency: 'USD',
        });
      } finally {
        await s.close();
      }
    });

    it('never logs the client secret, the PIN or a token', async () => {
      const lines: string[] = [];
      const log = {
        info: (o: Record<string, unknown>, m: string) => lines.push(JSON.stringify(o) + m),
        warn: (o: Record<string, unknown>, m: string) => lines.push(JSON.stringify(o) + m),
      };
      const c = make({ log, timeoutMs: 500 });
      await c.push(push('243970000040'));
      await c.payout(payout('243970000001'));
      await c.push(push('243970000041'));
      expect(lines.length).to.be.greaterThan(1);
      const all = lines.join('\n');
      expect(all).not.to.include('sim-client-secret');
      expect(all).not.to.include(PIN);
      expect(all).not.to.match(/Bearer|access_token/);
      await sleep(1_200);
    });
  });

  describe('refunds (full only)', () => {
    it('refunds a successful payment in full, naming its airtel_money_id; a second request is refused, never final', async () => {
      const req = push('243970000001', 2000);
      await connector.push(req);
      const [cb] = await waitFor(() => callbacksFor(req.paymentId).length > 0 && callbacksFor(req.paymentId));
      const moneyId = (cb.parsed as NormalisedCallback).providerRef!;
      const refund = {
        refundId: `re_${randomUUID()}`,
        paymentId: req.paymentId,
        paymentProviderRef: moneyId,
        paymentAmount: 2000,
        amount: 2000,
        operator: 'airtel' as const,
        currency: 'USD' as const,
        msisdn: '243970000001',
        description: null,
      };
      const accepted = await connector.refund(refund);
      expect(accepted.providerRef).to.equal(`refund-of:${moneyId}`);
      expect(simTx(compact(req.paymentId))).to.deep.include({ refunded: true, refundRequests: 1 });
      expect(await connector.ask(opRef('refund', refund.refundId, accepted.providerRef))).to.deep.equal({
        state: 'succeeded',
        providerRef: accepted.providerRef,
      });
      // the same refund sent again after its answer was lost: Airtel's refusal cannot tell it from a
      // refusal of a new refund, so it is not final (the refund stays open and an operator looks)
      const err = await rejection(connector.refund(refund));
      expect(err).to.include({ retryable: true, code: 'provider-refused' });
      expect(simTx(compact(req.paymentId))).to.deep.include({ refunded: true, refundRequests: 2 });
    });

    it('asks the payment for its airtel_money_id when only our id is known', async () => {
      const req = push('243970000001', 900);
      const accepted = await connector.push(req);
      await waitFor(() => simTx(compact(req.paymentId))!.status === 'TS');
      await connector.refund({
        refundId: `re_${randomUUID()}`,
        paymentId: req.paymentId,
        paymentProviderRef: accepted.providerRef,
        paymentAmount: 900,
        amount: 900,
        operator: 'airtel',
        currency: 'USD',
        msisdn: '243970000001',
        description: null,
      });
      expect(simTx(compact(req.paymentId))).to.deep.include({ refunded: true });
    });

    it('refuses a partial refund before anything is sent', async () => {
      const before = sim.requests().length;
      const err = await rejection(
        connector.refund({
          refundId: `re_${randomUUID()}`,
          paymentId: `pay_${randomUUID()}`,
          paymentProviderRef: 'MP1',
          paymentAmount: 1000,
          amount: 500,
          operator: 'airtel',
          currency: 'USD',
          msisdn: '243970000001',
          description: null,
        }),
      );
      expect(err.retryable).to.equal(false);
      expect(sim.requests().length).to.equal(before);
    });

    it("takes the reference's own refund answer (status SUCCESS beside success: false) as a success", async () => {
      const s = await startAirtelSimulator({ ...simOptions(), callbackUrl: null, refundAnswersAsExample: true });
      try {
        const c = make({ baseUrl: s.url, pinPublicKeyPem: s.publicKeyPem });
        const req = push('243970000001', 700);
        await c.push(req);
        await waitFor(() => s.transactions()[0]?.status === 'TS');
        const r = await c.refund({
          refundId: `re_${randomUUID()}`,
          paymentId: req.paymentId,
          paymentProviderRef: s.transactions()[0].airtelMoneyId,
          paymentAmount: 700,
          amount: 700,
          operator: 'airtel',
          currency: 'USD',
          msisdn: '243970000001',
          description: null,
        });
        expect(r.providerRef).to.match(/^refund-of:/);
      } finally {
        await s.close();
      }
    });
  });

  describe('payouts (disbursements)', () => {
    it('pays out with the encrypted PIN (v2, OAEP), and the enquiry says succeeded', async () => {
      const req = payout('243970000001', 2550);
      const accepted = await connector.payout(req);
      const t = simTx(compact(req.payoutId))!;
      expect(t).to.deep.include({
        kind: 'disbursement',
        msisdn: '970000001',
        amount: '25.5',
        status: 'TS',
        initiations: 1,
      });
      expect(accepted.providerRef).to.equal(t.airtelMoneyId);
      expect(await connector.ask(opRef('payout', req.payoutId))).to.deep.equal({
        state: 'succeeded',
        providerRef: t.airtelMoneyId,
      });
    });

    it('a payout Airtel refuses fails permanently with the mapped code', async () => {
      const err = await rejection(connector.payout(payout('243970000002')));
      expect([err.retryable, err.code]).to.deep.equal([false, 'insufficient-funds']);
      const err2 = await rejection(connector.payout(payout('243970000007')));
      expect(err2.code).to.equal('recipient-inactive');
    });

    it('a payout answered 500 but made is found, not paid twice; a repeated payout id is asked, not resent', async () => {
      const req = payout('243970000040');
      await connector.payout(req);
      await connector.payout(req);
      expect(simTx(compact(req.payoutId))).to.deep.include({ initiations: 2, status: 'TS' });
      expect(sim.transactions().filter((t) => t.id === compact(req.payoutId))).to.have.length(1);
    });

    it('a payout pending at first is asked again later', async () => {
      const req = payout('243970000021');
      await connector.payout(req);
      expect(await connector.ask(opRef('payout', req.payoutId))).to.deep.include({ state: 'pending' });
      await sleep(250);
      expect(await connector.ask(opRef('payout', req.payoutId))).to.deep.include({ state: 'succeeded' });
    });

    it('a wrong PIN is refused for good, and the PIN never appears in the error', async () => {
      const c = make({ disbursementPin: '1357' });
      const err = await rejection(c.payout(payout('243970000001')));
      expect([err.retryable, err.code]).to.deep.equal([false, 'provider-refused']);
      expect(err.message).not.to.include('1357');
    });

    it('v1 disbursements with a PKCS#1 v1.5 key (the simulator undoes the padding itself)', async () => {
      const s = await startAirtelSimulator({ ...simOptions(), callbackUrl: null, pinPadding: 'pkcs1' });
      try {
        const c = make({ baseUrl: s.url, pinPublicKeyPem: s.publicKeyPem, disbursementVersion: 'v1' });
        const req = payout('243970000001');
        await c.payout(req);
        expect(await c.ask(opRef('payout', req.payoutId))).to.deep.include({ state: 'succeeded' });
        expect(s.requests().map((r) => `${r.method} ${r.path.replace(/O[0-9a-f]{32}/, '{id}')}`)).to.deep.equal([
          'POST /auth/oauth2/token',
          'POST /standard/v1/disbursements/',
          'GET /standard/v1/disbursements/{id}',
        ]);
        // OAEP against a v1 (PKCS#1) key does not decrypt: refused, never retried on its own
        const wrongPadding = make({
          baseUrl: s.url,
          pinPublicKeyPem: s.publicKeyPem,
          disbursementVersion: 'v1',
          pinPadding: 'oaep',
        });
        expect((await rejection(wrongPadding.payout(payout('243970000001')))).retryable).to.equal(false);
      } finally {
        await s.close();
      }
    });
  });

  describe('amounts refused before anything leaves', () => {
    it('outside min/max, or more decimals than configured: 0 requests', async () => {
      const c = make({ amountRules: { CDF: { decimals: 0 } } });
      const before = sim.requests().length;
      for (const [amount, currency] of [
        [5, 'USD'],
        [250_001, 'USD'],
        [1_000_050, 'CDF'],
      ] as const) {
        const err = await rejection(c.push(push('243970000001', amount, currency)));
        expect([err.retryable, err.code]).to.deep.equal([false, 'amount-out-of-bounds']);
      }
      expect(sim.requests().length).to.equal(before);
    });
  });
});

describe('airtel simulator refuses what Airtel refuses', function () {
  this.timeout(10_000);
  let sim: AirtelSimulator;
  let client: HttpClient;
  let token: string;

  before(async () => {
    client = new HttpClient(4);
    sim = await startAirtelSimulator({ callbackUrl: null });
    const res = await client.request(`${sim.url}/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        client_id: 'sim-client-id',
        client_secret: 'sim-client-secret',
        grant_type: 'client_credentials',
      }),
      timeoutMs: 2_000,
    });
    const body = JSON.parse(res.body.toString()) as { access_token: string; expires_in: unknown };
    expect(check('tokenResponse', body)).to.deep.equal([]);
    expect(body.expires_in).to.equal('180');
    token = body.access_token;
  });

  after(async () => {
    await sim.close();
    client.close();
  });

  const good = () => ({
    reference: 'Order 42',
    subscriber: { country: 'CD', currency: 'USD', msisdn: '970000001' },
    transaction: { amount: 10.5, country: 'CD', currency: 'USD', id: `P${randomUUID().replace(/-/g, '')}` },
  });
  const post = async (body: string, headers: Record<string, string> = {}) => {
    const res = await client.request(`${sim.url}/merchant/v1/payments/`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'X-Country': 'CD',
        'X-Currency': 'USD',
        Authorization: `Bearer ${token}`,
        ...headers,
      },
      body,
      timeoutMs: 2_000,
    });
    return {
      status: res.status,
      body: JSON.parse(res.body.toString()) as {
        status?: { result_code?: string; success?: boolean; message?: string };
        error?: string;
      },
    };
  };

  it('takes a conforming request', async () => {
    const r = await post(JSON.stringify(good()));
    expect(r.status).to.equal(200);
    expect(check('answer', r.body)).to.deep.equal([]);
  });

  it('too many decimals, a bad amount, an unknown field, a phone number with its country code', async () => {
    const cases: [string, string][] = [
      [JSON.stringify(good()).replace('10.5', '10.555'), 'ESB000008'],
      [JSON.stringify(good()).replace('10.5', '-3'), 'ESB000008'],
      [JSON.stringify(good()).replace('10.5', '"10.5"'), 'ESB000008'],
      [JSON.stringify({ ...good(), callback_url: 'http://x' }), 'ESB000008'],
      [
        JSON.stringify({ ...good(), subscriber: { country: 'CD', currency: 'USD', msisdn: '243970000001' } }),
        'ESB000033',
      ],
      [
        JSON.stringify({ ...good(), subscriber: { country: 'CD', currency: 'USD', msisdn: '0970000001' } }),
        'ESB000033',
      ],
      ['{not json', 'ESB000008'],
    ];
    for (const [body, code] of cases) {
      const r = await post(body);
      expect([r.status, r.body.status?.result_code, r.body.status?.success], body).to.deep.equal([400, code, false]);
      expect(check('answer', r.body)).to.deep.equal([]);
    }
  });

  it('a missing, unknown or expired token: 401', async () => {
    expect((await post(JSON.stringify(good()), { Authorization: '' })).status).to.equal(401);
    expect((await post(JSON.stringify(good()), { Authorization: 'Bearer nope' })).status).to.equal(401);
    sim.expireTokens();
    const r = await post(JSON.stringify(good()));
    expect([r.status, r.body.error]).to.deep.equal([401, 'invalid_token']);
  });

  it('wrong client credentials at the token endpoint: 401 invalid_client', async () => {
    const res = await client.request(`${sim.url}/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ client_id: 'sim-client-id', client_secret: 'x', grant_type: 'client_credentials' }),
      timeoutMs: 2_000,
    });
    expect(res.status).to.equal(401);
    expect(JSON.parse(res.body.toString())).to.have.property('error', 'invalid_client');
  });

  it("lists each transaction with its final state and initiation count (the chaos drill's agreement row)", async () => {
    const res = await client.request(`${sim.url}/_sim/transactions`, { method: 'GET', timeoutMs: 2_000 });
    const list = JSON.parse(res.body.toString()) as { id: string; status: string; initiations: number }[];
    expect(list).to.have.length(1);
    expect(list[0]).to.include({ initiations: 1 });
  });
});
