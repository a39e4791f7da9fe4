import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startMpgsSimulator, type MpgsSimulator } from '../../scripts/simulators/mpgs/server';
import { HttpClient } from '../../shared/httpClient';
import { ProviderError } from '../../shared/providers/errors';
import {
  MpgsClient,
  notificationIdOf,
  parseNotification,
  verifyNotification,
} from '../../shared/providers/mpgs/client';
import { classify } from '../../shared/providers/mpgs/codes';
import {
  authTransactionId,
  decideAuthentication,
  payTransactionId,
  refundTransactionId,
  type BrowserDetails,
} from '../../shared/providers/mpgs/wire';
import { newId } from '../../shared/ids';

/**
 * MpgsClient against the gateway simulator over real HTTP: sessions, 3-D Secure (frictionless
 * and challenge), PAY outcomes by the documented test expiries, settling a 5xx after which the
 * transaction exists (no second charge), refunds, notifications and their secret, and the
 * simulator refusing requests out of the schemas.
 */

const MERCHANT = 'TESTMPGSCLIENT';
const PASSWORD = 'test-api-password';
const SECRET = 'test-notification-secret-0123';

const BROWSER: BrowserDetails = {
  userAgent: 'Mozilla/5.0 (test)',
  acceptHeaders: 'text/html',
  colorDepth: 24,
  javaEnabled: false,
  language: 'fr-CD',
  screenHeight: 800,
  screenWidth: 1280,
  timeZone: -60,
};

describe('MpgsClient against the gateway simulator', function () {
  let sim: MpgsSimulator;
  let client: HttpClient;
  let mpgs: MpgsClient;
  let receiver: http.Server;
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];

  before(async () => {
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    sim = await startMpgsSimulator({
      merchantId: MERCHANT,
      apiPassword: PASSWORD,
      notificationSecret: SECRET,
      notificationUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callbacks/mpgs`,
      slowMs: 1500,
    });
    client = new HttpClient(8);
    mpgs = new MpgsClient({
      gatewayUrl: sim.url,
      merchantId: MERCHANT,
      apiPassword: PASSWORD,
      timeoutMs: 5000,
      client,
    });
  });

  after(async () => {
    client.close();
    await sim.close();
    receiver.closeAllConnections();
    await new Promise<void>((r) => receiver.close(() => r()));
  });

  async function sessionWith(card: { number: string; expiry: string }, minor: number, orderId: string) {
    const { sessionId } = await mpgs.createSession();
    await mpgs.updateSession(sessionId, minor, 'USD', orderId);
    const [expiryMonth, expiryYear] = card.expiry.split('/');
    sim.putCard(sessionId, { number: card.number, expiryMonth, expiryYear, securityCode: '100' });
    return sessionId;
  }

  async function authenticated(cardNumber: string, expiry: string, minor: number) {
    const orderId = newId('payment');
    const sessionId = await sessionWith({ number: cardNumber, expiry }, minor, orderId);
    const init = await mpgs.initiateAuthentication(sessionId, orderId, authTransactionId(1), 'USD');
    expect(decideAuthentication(init, 'proceed').next).to.equal('authenticate');
    const auth = await mpgs.authenticatePayer(
      sessionId,
      orderId,
      authTransactionId(1),
      minor,
      'USD',
      BROWSER,
      'http://127.0.0.1:1/checkout/x/3ds-return',
    );
    return { orderId, sessionId, auth };
  }

  it('creates and updates a session', async () => {
    const { sessionId, authenticationLimit } = await mpgs.createSession();
    expect(sessionId).to.match(/^SESSION/);
    expect(authenticationLimit).to.equal(5);
    await mpgs.updateSession(sessionId, 2500, 'USD', newId('payment'));
  });

  it('frictionless: authenticates without a challenge and pays once, approved', async () => {
    const { orderId, sessionId, auth } = await authenticated('2223000000000007', '01/39', 2550);
    expect(auth.payerInteraction).to.equal('NOT_REQUIRED');
    expect(decideAuthentication(auth, 'proceed')).to.deep.equal({ next: 'pay', authenticated: true });
    const paid = await mpgs.pay(orderId, payTransactionId(1), {
      sessionId,
      minor: 2550,
      currency: 'USD',
      authenticationTransactionId: authTransactionId(1),
    });
    expect(paid).to.include({
      result: 'SUCCESS',
      gatewayCode: 'APPROVED',
      amount: 2550,
      currency: 'USD',
      settledBy: 'answer',
    });
    expect(classify(paid.result, paid.gatewayCode, false)).to.deep.equal({ state: 'succeeded' });
    expect(paid.totalCaptured).to.equal(2550);
  });

  it('challenge approved: the redirect HTML points at the simulator, and a re-read after the return says pay', async () => {
    const { orderId, sessionId, auth } = await authenticated('5123450000000008', '01/39', 1000);
    const decision = decideAuthentication(auth, 'proceed');
    expect(decision.next).to.equal('challenge');
    expect(auth.redirectHtml).to.contain(`${sim.url}/acs/challenge`);
    const back = sim.completeChallenge(orderId, authTransactionId(1), true);
    expect(back.url).to.equal('http://127.0.0.1:1/checkout/x/3ds-return');
    expect(back.fields['order.id']).to.equal(orderId);
    const reread = (await mpgs.retrieveTransaction(orderId, authTransactionId(1)))!;
    expect(decideAuthentication(reread, 'proceed')).to.deep.equal({ next: 'pay', authenticated: true });
    const paid = await mpgs.pay(orderId, payTransactionId(1), {
      sessionId,
      minor: 1000,
      currency: 'USD',
      authenticationTransactionId: authTransactionId(1),
    });
    expect(paid.gatewayCode).to.equal('APPROVED');
  });

  it('challenge failed: the re-read says authentication-failed and no PAY is needed', async () => {
    const { orderId, auth } = await authenticated('5123450000000008', '01/39', 1000);
    expect(decideAuthentication(auth, 'proceed').next).to.equal('challenge');
    sim.completeChallenge(orderId, authTransactionId(1), false);
    const reread = (await mpgs.retrieveTransaction(orderId, authTransactionId(1)))!;
    expect(decideAuthentication(reread, 'proceed')).to.include({ next: 'fail', failureCode: 'authentication-failed' });
    expect(sim.transactions().filter((t) => t.orderId === orderId && t.type === 'PAYMENT')).to.have.length(0);
  });

  for (const [expiry, gatewayCode, failureCode] of [
    ['05/39', 'DECLINED', 'card-declined'],
    ['06/39', 'INSUFFICIENT_FUNDS', 'insufficient-funds'],
    ['04/27', 'EXPIRED_CARD', 'expired-card'],
  ] as const) {
    it(`a decline comes back as 2xx with result FAILURE: ${gatewayCode} is ${failureCode}`, async () => {
      const orderId = newId('payment');
      const sessionId = await sessionWith({ number: '5111111111111118', expiry }, 700, orderId);
      const paid = await mpgs.pay(orderId, payTransactionId(1), { sessionId, minor: 700, currency: 'USD' });
      expect(paid).to.include({ result: 'FAILURE', gatewayCode });
      expect(classify(paid.result, paid.gatewayCode, false)).to.deep.equal({ state: 'failed', failureCode });
    });
  }

  it('a 5xx after the transaction was created is settled by a retrieve; paying again with the same ids charges nothing more', async () => {
    const orderId = newId('payment');
    const sessionId = await sessionWith({ number: '5111111111111118', expiry: '01/39' }, 4200, orderId);
    sim.setFaults({ nextTransaction: '5xx-created' });
    const paid = await mpgs.pay(orderId, payTransactionId(1), { sessionId, minor: 4200, currency: 'USD' });
    expect(paid).to.include({ result: 'SUCCESS', gatewayCode: 'APPROVED', settledBy: 'retrieve' });
    const again = await mpgs.pay(orderId, payTransactionId(1), { sessionId, minor: 4200, currency: 'USD' });
    expect(again).to.include({ transactionId: 'pay-1', gatewayCode: 'APPROVED', settledBy: 'retrieve' });
    const order = (await mpgs.retrieveOrder(orderId))!;
    expect(order.transactions.filter((t) => t.type === 'PAYMENT')).to.have.length(1);
    expect(order.totalCaptured).to.equal(4200);
    const seen = sim.transactions().find((t) => t.orderId === orderId && t.id === 'pay-1')!;
    expect(seen.requests).to.equal(2);
  });

  it('a 5xx before anything was created: not found on retrieve, sent again with the same ids, charged once', async () => {
    const orderId = newId('payment');
    const sessionId = await sessionWith({ number: '5111111111111118', expiry: '01/39' }, 1100, orderId);
    sim.setFaults({ nextTransaction: '5xx-not-created' });
    const paid = await mpgs.pay(orderId, payTransactionId(1), { sessionId, minor: 1100, currency: 'USD' });
    expect(paid).to.include({ transactionId: 'pay-1', gatewayCode: 'APPROVED', settledBy: 'answer' });
    expect(sim.transactions().filter((t) => t.orderId === orderId && t.type === 'PAYMENT')).to.have.length(1);
  });

  it('a slow answer past the timeout is settled by a retrieve, not failed', async () => {
    const quick = new MpgsClient({
      gatewayUrl: sim.url,
      merchantId: MERCHANT,
      apiPassword: PASSWORD,
      timeoutMs: 300,
      client,
    });
    const orderId = newId('payment');
    const sessionId = await sessionWith({ number: '5111111111111118', expiry: '10/39' }, 900, orderId);
    let err: unknown;
    try {
      await quick.pay(orderId, payTransactionId(1), { sessionId, minor: 900, currency: 'USD' });
    } catch (e) {
      err = e;
    }
    // the first answer and the retrieve may both miss the slow window: unknown, never failed
    if (err) {
      expect(err).to.be.instanceOf(ProviderError);
      expect((err as ProviderError).retryable).to.equal(true);
    }
    await new Promise((r) => setTimeout(r, 1700));
    const t = (await mpgs.retrieveTransaction(orderId, payTransactionId(1)))!;
    expect(t.gatewayCode).to.equal('APPROVED');
    expect(sim.transactions().filter((x) => x.orderId === orderId && x.type === 'PAYMENT')).to.have.length(1);
  });

  it('retrieve answers null for a transaction or order the gateway does not have', async () => {
    expect(await mpgs.retrieveTransaction(newId('payment'), 'pay-1')).to.equal(null);
    expect(await mpgs.retrieveOrder(newId('payment'))).to.equal(null);
  });

  it('refunds part of a payment, once, and refuses more than was captured', async () => {
    const orderId = newId('payment');
    const sessionId = await sessionWith({ number: '5111111111111118', expiry: '01/39' }, 5000, orderId);
    await mpgs.pay(orderId, payTransactionId(1), { sessionId, minor: 5000, currency: 'USD' });
    const refundId = newId('refund');
    const r = await mpgs.refund(orderId, refundTransactionId(refundId), 1250, 'USD');
    expect(r).to.include({ result: 'SUCCESS', type: 'REFUND', amount: 1250, totalRefunded: 1250 });
    const again = await mpgs.refund(orderId, refundTransactionId(refundId), 1250, 'USD');
    expect(again).to.include({ settledBy: 'retrieve', totalRefunded: 1250 });
    try {
      await mpgs.refund(orderId, refundTransactionId(newId('refund')), 4000, 'USD');
      expect.fail('refunded more than captured');
    } catch (e) {
      expect(e).to.be.instanceOf(ProviderError);
      expect((e as ProviderError).retryable).to.equal(false);
    }
  });

  it('sends notifications with X-Notification-Secret, checked in constant time, whose body is a transaction', async () => {
    received.length = 0;
    const orderId = newId('payment');
    const sessionId = await sessionWith({ number: '5111111111111118', expiry: '01/39' }, 300, orderId);
    sim.setFaults({ notifications: 'duplicate' });
    await mpgs.pay(orderId, payTransactionId(1), { sessionId, minor: 300, currency: 'USD' });
    const deadline = Date.now() + 5000;
    while (received.filter((n) => n.body.includes(orderId)).length < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    sim.setFaults({ notifications: 'normal' });
    const mine = received.filter((n) => n.body.includes(orderId));
    expect(mine).to.have.length(2);
    expect(notificationIdOf(mine[0].headers)).to.equal(notificationIdOf(mine[1].headers));
    expect(verifyNotification(mine[0].headers, SECRET)).to.equal(true);
    expect(verifyNotification(mine[0].headers, 'another-secret-0123456')).to.equal(false);
    expect(verifyNotification({}, SECRET)).to.equal(false);
    expect(parseNotification(mine[0].body)).to.include({
      orderId,
      transactionId: 'pay-1',
      gatewayCode: 'APPROVED',
      amount: 300,
    });
    expect(() => parseNotification('{"result":"SUCCESS"}')).to.throw(/notification/);
  });

  it('refuses requests out of the schema with the gateway error shape, and wrong credentials with 401', async () => {
    const base = `${sim.url}/api/rest/version/100/merchant/${MERCHANT}`;
    const auth = `Basic ${Buffer.from(`merchant.${MERCHANT}:${PASSWORD}`).toString('base64')}`;
    const put = (path: string, body: unknown, authorization = auth) =>
      client.request(base + path, {
        method: 'PUT',
        headers: { Authorization: authorization, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        timeoutMs: 5000,
      });
    const res = await put(`/order/${newId('payment')}/transaction/pay-1`, {
      apiOperation: 'PAY',
      order: { amount: 10.5, currency: 'USD' },
      session: { id: 'SESSION0002X' },
      sourceOfFunds: { type: 'CARD' },
    });
    expect(res.status).to.equal(400);
    const body = JSON.parse(res.body.toString()) as { result: string; error: { cause: string; field: string } };
    expect(body).to.deep.include({ result: 'ERROR' });
    expect(body.error).to.include({ cause: 'INVALID_REQUEST', field: 'order.amount' });
    const extra = await put(`/session/SESSION0002X`, { order: { amount: '1.00', currency: 'USD' }, card: {} });
    expect(JSON.parse(extra.body.toString()).error).to.include({ validationType: 'UNSUPPORTED', field: 'card' });
    const denied = await put(`/session/SESSION0002X`, {}, 'Basic bm9wZTpub3Bl');
    expect(denied.status).to.equal(401);
    try {
      await new MpgsClient({
        gatewayUrl: sim.url,
        merchantId: MERCHANT,
        apiPassword: 'wrong',
        timeoutMs: 5000,
        client,
      }).createSession();
      expect.fail('wrong password accepted');
    } catch (e) {
      expect((e as ProviderError).code).to.equal('provider-auth');
    }
  });
});
