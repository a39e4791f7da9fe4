import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import type { PaymentsApi, CreatePaymentParams } from '../../shared/client/sdk';
import {
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  PaymentsApiError,
  PermissionError,
  UnprocessableError,
} from '../../shared/client/errors';

/**
 * The typed SDK against the real service: creation with its idempotency key, auto-pagination
 * over real cursors, and the typed errors the service's answers become. Every answer is also
 * checked against the OpenAPI document (env.sdk installs the contract check).
 */
describe('merchant SDK against the service', () => {
  let env: TestEnv;
  let shop: MerchantFixture;
  let api: PaymentsApi;

  const payment = (over: Partial<CreatePaymentParams> = {}): CreatePaymentParams => ({
    amount: 2500,
    currency: 'USD',
    method: 'mobile_money',
    operator: 'vodacom',
    phone: '243990000001',
    reference: `order-${randomUUID()}`,
    ...over,
  });

  before(async () => {
    env = await startTestEnv({ RATE_LIMIT_PER_MINUTE: '100000' });
    shop = await env.merchant();
    api = env.sdk(shop.credential);
  });
  after(() => env.close());

  it('creates a payment (typed), and the same Idempotency-Key replays it instead of paying twice', async () => {
    const key = randomUUID();
    const params = payment();
    const first = await api.payments.create(params, { idempotencyKey: key });
    expect(first).to.include({
      object: 'payment',
      status: 'processing',
      amount_charged: 2500,
      reference: params.reference,
    });
    expect(first.id).to.match(/^pay_/);
    const again = await api.payments.create(params, { idempotencyKey: key });
    expect(again.id).to.equal(first.id);
    expect((await api.payments.retrieve(first.id)).id).to.equal(first.id);
  });

  it('pages through every payment with for await, across real cursors', async () => {
    const other = await env.merchant();
    const sdk = env.sdk(other.credential);
    const created: string[] = [];
    for (let i = 0; i < 7; i++) created.push((await sdk.payments.create(payment())).id);
    const seen: string[] = [];
    for await (const p of sdk.payments.list({ limit: 3 })) seen.push(p.id);
    expect(seen).to.have.length(7);
    expect([...seen].sort()).to.deep.equal([...created].sort());
    const all = (await other.client.get('/v1/payments?limit=100')).body.data.map((p: { id: string }) => p.id);
    expect(seen).to.deep.equal(all); // the list's own order: newest first, no repeat, no gap
    const page = await sdk.payments.list({ limit: 3 }).page();
    expect(page.data).to.have.length(3);
    expect(page.has_more).to.equal(true);
    expect(await sdk.payments.list({ limit: 2 }).toArray(3)).to.have.length(3);
    const filtered = await sdk.payments
      .list({ reference: (await sdk.payments.retrieve(created[0])).reference })
      .toArray();
    expect(filtered.map((p) => p.id)).to.deep.equal([created[0]]);
  });

  it('throws typed errors carrying the code, the field and the request id', async () => {
    const missing = await api.payments.retrieve(`pay_${randomUUID()}`).catch((e: unknown) => e);
    expect(missing).to.be.instanceOf(NotFoundError).and.instanceOf(PaymentsApiError);
    expect(missing).to.include({ status: 404, code: 'not-found' });
    expect((missing as PaymentsApiError).requestId)
      .to.be.a('string')
      .and.equal((missing as PaymentsApiError).headers.get('x-request-id'));

    const invalid = await api.payments.create(payment({ phone: '12345' })).catch((e: unknown) => e);
    expect(invalid).to.be.instanceOf(InvalidRequestError);
    expect(invalid).to.include({ status: 400, code: 'validation-failed', param: 'phone' });

    const params = payment();
    await api.payments.create(params);
    // a new key, the same reference, another amount: the same body within the second would be the same
    // signature, refused as a replay (409 request-replayed) before the reference is looked at
    const conflict = await api.payments.create({ ...params, amount: params.amount + 1 }).catch((e: unknown) => e);
    expect(conflict).to.be.instanceOf(ConflictError);
    expect(conflict).to.include({ status: 409, code: 'reference-conflict', param: 'reference' });

    const processing = await api.payments.create(payment());
    const refund = await api.refunds.create(processing.id, { amount: 100 }).catch((e: unknown) => e);
    expect(refund).to.be.instanceOf(UnprocessableError);
    expect(refund).to.include({ status: 422, code: 'payment-not-refundable' });

    const reader = await env.merchant({ scope: 'read' });
    const denied = await env
      .sdk(reader.credential)
      .payments.create(payment())
      .catch((e: unknown) => e);
    expect(denied).to.be.instanceOf(PermissionError);
    expect(denied).to.include({ status: 403, code: 'insufficient-scope' });
  });

  it('reads the other resources through their typed methods', async () => {
    const balance = await api.balance.retrieve();
    expect(balance).to.include({ object: 'balance', environment: 'test' });
    expect(await api.payouts.list().toArray()).to.deep.equal([]);
    expect(await api.settlements.list().toArray()).to.deep.equal([]);
    expect(await api.events.list({ type: 'payment.succeeded' }).toArray()).to.deep.equal([]);
    const now = Math.floor(Date.now() / 1000);
    const csv = await api.reports.transactionsCsv({ from: now - 3600, to: now + 60 });
    expect(csv.split('\n')[0]).to.equal('created,type,id,source_id,reference,currency,amount,fee,net,status');
    const tooLong = await api.reports.transactionsCsv({ from: 0, to: 40 * 86_400 }).catch((e: unknown) => e);
    expect(tooLong).to.be.instanceOf(InvalidRequestError);
    const noSettlement = await api.settlements
      .transactions(`stl_${randomUUID()}`)
      .toArray()
      .catch((e: unknown) => e);
    expect(noSettlement).to.be.instanceOf(NotFoundError);
    expect((await api.availability.list()).data.map((a) => a.operator).sort()).to.deep.equal([
      'africell',
      'airtel',
      'orange',
      'vodacom',
    ]);
    const number = await api.phoneNumbers.lookup('+243 81 234 5678');
    expect(number).to.deep.equal({
      object: 'phone_number',
      input: '+243 81 234 5678',
      msisdn: '243812345678',
      operator: 'vodacom',
    });
  });
});
