import { expect } from 'chai';
import { ProviderError } from '../../shared/providers/errors';
import type { MpgsClient, Settled } from '../../shared/providers/mpgs/client';
import { mpgsAskRefund, mpgsRefund } from '../../shared/providers/mpgs/refund';
import type { TransactionView } from '../../shared/providers/mpgs/wire';

/**
 * How shared/providers/mpgs/refund.ts reads the gateway's answers to a REFUND and to a retrieve of
 * one (codes.ts): the outcomes the simulator does not play (a declined or pending refund, another
 * transaction type under our id). The simulator's own flows: test/integration/mpgs-refund.test.ts.
 */

const PAYMENT = 'pay_6f1c2b9e-3a4d-4e5f-8a7b-9c0d1e2f3a4b';
const REFUND = 're_0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d';

function view(over: Partial<TransactionView>): TransactionView {
  return {
    result: 'SUCCESS',
    gatewayCode: 'APPROVED',
    gatewayRecommendation: null,
    orderId: PAYMENT,
    transactionId: REFUND,
    type: 'REFUND',
    amount: 1500,
    currency: 'USD',
    orderStatus: null,
    totalCaptured: null,
    totalRefunded: null,
    authenticationStatus: null,
    payerInteraction: null,
    redirectHtml: null,
    card: null,
    ...over,
  };
}

/** A client whose REFUND and RETRIEVE_TRANSACTION answer `t` (settled by `settledBy`). */
const clientAnswering = (t: TransactionView | null, settledBy: Settled['settledBy'] = 'answer') =>
  ({
    refund: () => Promise.resolve({ ...t!, settledBy }),
    retrieveTransaction: () => Promise.resolve(t),
  }) as unknown as MpgsClient;

const req = {
  refundId: REFUND,
  paymentId: PAYMENT,
  paymentProviderRef: null,
  amount: 1500,
  currency: 'USD' as const,
  partial: true,
  reason: null,
};

async function thrown(p: Promise<unknown>): Promise<ProviderError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).to.be.instanceOf(ProviderError);
  return err as ProviderError;
}

describe('MPGS refund outcomes (shared/providers/mpgs/refund.ts)', () => {
  it('SUCCESS APPROVED: succeeded, referenced by order and transaction', async () => {
    expect(await mpgsRefund(clientAnswering(view({})), req)).to.deep.equal({
      providerRef: `${PAYMENT}/${REFUND}`,
      outcome: 'succeeded',
      failureCode: null,
      failureMessage: null,
    });
  });

  it('FAILURE with a final code: failed with our failure code', async () => {
    const declined = await mpgsRefund(clientAnswering(view({ result: 'FAILURE', gatewayCode: 'DECLINED' })), req);
    expect(declined).to.include({ outcome: 'failed', failureCode: 'card-declined' });
    const aborted = await mpgsRefund(clientAnswering(view({ result: 'FAILURE', gatewayCode: 'ABORTED' })), req);
    expect(aborted).to.include({ outcome: 'failed', failureCode: 'provider-failed' });
  });

  it('anything unknown is a retryable error, never a failure: PENDING, a code to settle, another transaction type', async () => {
    for (const t of [
      view({ result: 'PENDING', gatewayCode: 'PENDING' }),
      view({ result: 'FAILURE', gatewayCode: 'TIMED_OUT' }),
      view({ result: 'SUCCESS', gatewayCode: 'SUBMITTED' }),
      view({ type: 'PAYMENT' }),
    ]) {
      const err = await thrown(mpgsRefund(clientAnswering(t), req));
      expect(err.retryable, `${t.result} ${t.gatewayCode} ${t.type}`).to.equal(true);
      expect(err.code).to.equal('provider-unknown-outcome');
    }
  });

  it('a FAILURE the client settled by a retrieve is final where codes.ts says so', async () => {
    const t = view({ result: 'FAILURE', gatewayCode: 'TIMED_OUT' });
    expect(await mpgsRefund(clientAnswering(t, 'retrieve'), req)).to.include({
      outcome: 'failed',
      failureCode: 'provider-failed',
    });
  });

  it('asks: not found, succeeded with the echoed amount, failed, pending while unsettled', async () => {
    const ref = { paymentId: PAYMENT, refundId: REFUND };
    expect(await mpgsAskRefund(clientAnswering(null), ref)).to.deep.equal({ state: 'not_found' });
    expect(await mpgsAskRefund(clientAnswering(view({})), ref)).to.deep.equal({
      state: 'succeeded',
      providerRef: `${PAYMENT}/${REFUND}`,
      amount: 1500,
      currency: 'USD',
    });
    expect(
      await mpgsAskRefund(clientAnswering(view({ result: 'FAILURE', gatewayCode: 'EXPIRED_CARD' })), ref),
    ).to.include({ state: 'failed', failureCode: 'expired-card' });
    expect(
      await mpgsAskRefund(clientAnswering(view({ result: 'PENDING', gatewayCode: 'PENDING' })), ref),
    ).to.deep.equal({ state: 'pending', providerRef: `${PAYMENT}/${REFUND}` });
  });
});
