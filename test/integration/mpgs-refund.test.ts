import { expect } from 'chai';
import { startMpgsSimulator, type MpgsSimulator } from '../../scripts/simulators/mpgs/server';
import { HttpClient } from '../../shared/httpClient';
import { ProviderError } from '../../shared/providers/errors';
import { MpgsClient } from '../../shared/providers/mpgs/client';
import { mpgsAskRefund, mpgsRefund } from '../../shared/providers/mpgs/refund';
import { payTransactionId } from '../../shared/providers/mpgs/wire';
import type { CardRefundRequest } from '../../shared/providers/cardConnector';
import { newId } from '../../shared/ids';

/**
 * The operator's card refund through the Mastercard Gateway (shared/providers/mpgs/refund.ts)
 * against the gateway simulator over real HTTP: full and partial refunds succeed; a 5xx after the
 * gateway made the refund is settled by a retrieve and refunds once; more than the captured amount
 * is refused by the gateway and fails the refund; the status query of a refund.
 */

const MERCHANT = 'TESTMPGSREFUND';
const PASSWORD = 'test-api-password';

describe('MPGS card refunds (mpgsRefund, mpgsAskRefund) against the gateway simulator', function () {
  this.timeout(30_000);
  let sim: MpgsSimulator;
  let client: HttpClient;
  let mpgs: MpgsClient;

  before(async () => {
    sim = await startMpgsSimulator({
      merchantId: MERCHANT,
      apiPassword: PASSWORD,
      notificationSecret: 'test-notification-secret-0123',
      notificationUrl: null,
    });
    client = new HttpClient(4);
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
  });

  /** A payment of `minor` USD paid on the gateway (order = our payment id); its id. */
  async function paidOrder(minor: number): Promise<string> {
    const paymentId = newId('payment');
    const { sessionId } = await mpgs.createSession();
    await mpgs.updateSession(sessionId, minor, 'USD', paymentId);
    sim.putCard(sessionId, { number: '5111111111111118', expiryMonth: '01', expiryYear: '39', securityCode: '100' });
    const paid = await mpgs.pay(paymentId, payTransactionId(1), { sessionId, minor, currency: 'USD' });
    expect(paid).to.include({ result: 'SUCCESS', gatewayCode: 'APPROVED' });
    return paymentId;
  }

  const request = (paymentId: string, amount: number, charged: number): CardRefundRequest => ({
    refundId: newId('refund'),
    paymentId,
    paymentProviderRef: null,
    amount,
    currency: 'USD',
    partial: amount < charged,
    reason: null,
  });
  const refundsAt = (paymentId: string) =>
    sim.transactions().filter((t) => t.orderId === paymentId && t.type === 'REFUND');

  it('refunds a payment in full: succeeded, one REFUND transaction under the refund id', async () => {
    const paymentId = await paidOrder(2500);
    const req = request(paymentId, 2500, 2500);
    const answer = await mpgsRefund(mpgs, req);
    expect(answer).to.deep.equal({
      providerRef: `${paymentId}/${req.refundId}`,
      outcome: 'succeeded',
      failureCode: null,
      failureMessage: null,
    });
    expect(refundsAt(paymentId).map((t) => [t.id, t.amount, t.result])).to.deep.equal([
      [req.refundId, '25.00', 'SUCCESS'],
    ]);
    expect(await mpgsAskRefund(mpgs, { paymentId, refundId: req.refundId })).to.deep.equal({
      state: 'succeeded',
      providerRef: `${paymentId}/${req.refundId}`,
      amount: 2500,
      currency: 'USD',
    });
  });

  it('refunds in two parts, then refuses more than is left: the third refund fails provider-refused', async () => {
    const paymentId = await paidOrder(5000);
    const first = await mpgsRefund(mpgs, request(paymentId, 1200, 5000));
    const second = await mpgsRefund(mpgs, request(paymentId, 3800, 5000));
    expect([first.outcome, second.outcome]).to.deep.equal(['succeeded', 'succeeded']);
    const over = request(paymentId, 1, 5000);
    const refused = await mpgsRefund(mpgs, over);
    expect(refused).to.include({ outcome: 'failed', failureCode: 'provider-refused' });
    expect(refused.failureMessage).to.contain('exceeds');
    expect(refundsAt(paymentId).map((t) => t.amount)).to.deep.equal(['12.00', '38.00']);
    expect(await mpgsAskRefund(mpgs, { paymentId, refundId: over.refundId })).to.deep.equal({ state: 'not_found' });
  });

  it('refuses a refund above the captured amount: failed, nothing refunded', async () => {
    const paymentId = await paidOrder(1000);
    const answer = await mpgsRefund(mpgs, request(paymentId, 1001, 1000));
    expect(answer).to.include({ outcome: 'failed', failureCode: 'provider-refused' });
    expect(refundsAt(paymentId)).to.have.length(0);
  });

  it('a 5xx after the gateway made the refund is settled by a retrieve: succeeded, refunded once; asked again, the same', async () => {
    const paymentId = await paidOrder(3300);
    const req = request(paymentId, 3300, 3300);
    sim.setFaults({ nextTransaction: '5xx-created' });
    const answer = await mpgsRefund(mpgs, req);
    expect(answer.outcome).to.equal('succeeded');
    // the refund pool's retry after a crash: the same ids again, no second refund
    expect((await mpgsRefund(mpgs, req)).outcome).to.equal('succeeded');
    const seen = refundsAt(paymentId);
    expect(seen).to.have.length(1);
    expect(seen[0]).to.include({ id: req.refundId, amount: '33.00', result: 'SUCCESS' });
    expect(seen[0].requests).to.equal(2);
    expect((await mpgs.retrieveOrder(paymentId))!.totalRefunded).to.equal(3300);
  });

  it('a 5xx before the gateway made anything: not found, sent again with the same ids, refunded once', async () => {
    const paymentId = await paidOrder(700);
    const req = request(paymentId, 700, 700);
    sim.setFaults({ nextTransaction: '5xx-not-created' });
    expect((await mpgsRefund(mpgs, req)).outcome).to.equal('succeeded');
    expect(refundsAt(paymentId)).to.have.length(1);
  });

  it('an unreachable gateway is an unknown outcome: a retryable error, never a failure', async () => {
    const down = new MpgsClient({
      gatewayUrl: 'http://127.0.0.1:9',
      merchantId: MERCHANT,
      apiPassword: PASSWORD,
      timeoutMs: 1000,
      client,
    });
    const req = request(newId('payment'), 100, 100);
    for (const call of [() => mpgsRefund(down, req), () => mpgsAskRefund(down, req)]) {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(ProviderError);
      expect((err as ProviderError).retryable).to.equal(true);
    }
  });
});
