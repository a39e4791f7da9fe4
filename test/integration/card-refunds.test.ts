import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { checkLedger } from '../../shared/ledger/check';
import { createCardPayment, pay, startCardEnv, tokenFor, waitForRow, type CardTestEnv } from '../helpers/cards';
import { ADMIN_TOKEN, type MerchantFixture } from '../helpers/env';
import { aMerchant, aSucceededPayment, balanceOf, startSandbox } from '../helpers/money';
import { eventually } from '../../scripts/lib/processes';
import { freePort } from '../../scripts/lib/ports';

/**
 * The operator's refund of a card payment (docs/decisions.md#operator-admin-api): POST
 * /admin/payments/{id}/refunds, with test keys through the card sandbox (vault, acquirer,
 * card-charge, refund and callback-reconciler as real processes). The merchant API still refuses
 * card refunds (422 card-refund-not-supported).
 */
describe('operator refunds of card payments (card sandbox, real workers)', function () {
  this.timeout(60_000);
  let c: CardTestEnv;
  let shop: MerchantFixture;
  let hookId: string;
  const db = () => c.env.services.db;
  let ipCounter = 1;

  before(async () => {
    // mobile money too: a mobile-money payment is refused by the operator's route
    const sandboxPort = await freePort();
    c = await startCardEnv({
      TRUSTED_PROXIES: '1',
      RATE_LIMIT_PER_MINUTE: '100000',
      SANDBOX_PROVIDER_PORT: String(sandboxPort),
      SANDBOX_PROVIDER_URL: `http://127.0.0.1:${sandboxPort}`,
      SANDBOX_CALLBACK_DELAY_MS: '100',
    });
    await c.env.spawn('workers/refund/index.ts');
    await startSandbox(c.env, { SANDBOX_PROVIDER_PORT: String(sandboxPort) });
    await c.env.spawn('workers/provider-push/index.ts');
    shop = await aMerchant(c.env);
    const hook = await c.env.admin('POST', '/admin/webhooks', {
      merchant_id: shop.merchant.id,
      url: 'http://127.0.0.1:9/hook',
      events: ['refund.*'],
      environment: 'test',
    });
    expect(hook.status).to.equal(201);
    hookId = hook.body.id;
  });
  after(async () => {
    expect(await checkLedger(db()), 'ledger:check after the card refunds file').to.deep.equal([]);
    await c.env.close();
  });

  /** A card payment paid with `number` through the checkout, succeeded. */
  async function paid(amount: number, number = '4242424242424242') {
    const p = await createCardPayment(shop.client, { amount });
    const { token } = await tokenFor(c.vaultUrl, p.id, number);
    const res = await pay(c.env.baseUrl, p.id, { token }, { 'X-Forwarded-For': `198.51.100.${ipCounter++}` });
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    await waitForRow(c.env, p.id, (row) => row?.status === 'succeeded');
    return p.id as string;
  }

  const refund = (paymentId: string, body: unknown = {}, key: string | null = randomUUID(), token = ADMIN_TOKEN) =>
    c.env.admin('POST', `/admin/payments/${paymentId}/refunds`, body, {
      Authorization: `Bearer ${token}`,
      ...(key ? { 'Idempotency-Key': key } : {}),
    });
  const refundRows = (paymentId: string) => db()('refunds').where({ payment_id: paymentId }).orderBy('created_at');
  const refundDone = (id: string) =>
    eventually(
      async () => {
        const row = await db()('refunds').where({ id }).first();
        return row?.status !== 'pending' ? row : undefined;
      },
      15_000,
      50,
    );
  const history = (id: string) =>
    db()('refund_status_changes').where({ refund_id: id }).orderBy('id').select('from_status', 'to_status', 'reason');
  const eventsOf = (id: string) =>
    db()('events').where({ object_id: id }).orderBy('object_version').select('id', 'type', 'body');
  const paymentOf = async (id: string) => (await shop.client.get(`/v1/payments/${id}`)).body;
  const acquirerView = async (id: string) => {
    const res = await fetch(`${c.providerUrl}/v1/transactions/${id}`, {
      headers: { Authorization: `Bearer ${c.env.config.connectors['card-sandbox'].apiKey}` },
    });
    return res.status === 200 ? ((await res.json()) as any) : { status: res.status };
  };
  const postings = (id: string) => db()('ledger_transactions').where({ reference_id: id }).pluck('kind');

  it('refunds a card payment in full: refund.succeeded with its webhook, the payment refunded, the balance debited once', async () => {
    const id = await paid(2_500);
    const before = (await balanceOf(shop.client)).available.USD;
    const res = await refund(id, { reason: 'damaged goods' });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body).to.include({
      object: 'refund',
      transaction_id: id,
      amount: 2_500,
      currency: 'USD',
      reason: 'damaged goods',
      status: 'pending',
    });
    expect((await balanceOf(shop.client)).available.USD).to.equal(before - 2_500);
    expect(await paymentOf(id)).to.include({ status: 'refunded', amount_refunded: 2_500 });

    const row = await refundDone(res.body.id);
    expect(row).to.include({ status: 'succeeded', provider: 'card-sandbox', operator: null, phone: null });
    expect(row.provider_ref).to.match(/^SBX-CARD-RF-/);
    expect(await history(res.body.id)).to.deep.equal([
      { from_status: null, to_status: 'pending', reason: 'created' },
      { from_status: 'pending', to_status: 'succeeded', reason: 'provider-callback' },
    ]);
    const events = await eventsOf(res.body.id);
    expect(events.map((e) => e.type)).to.deep.equal(['refund.succeeded']);
    expect(events[0].body.data.object).to.include({ id: res.body.id, status: 'succeeded', amount: 2_500 });
    const deliveries = await db()('webhook_deliveries').where({ event_id: events[0].id }).pluck('webhook_id');
    expect(deliveries).to.deep.equal([hookId]);
    expect((await postings(res.body.id)).sort()).to.deep.equal(['refund_debit', 'refund_deliver']);
    expect((await balanceOf(shop.client)).available.USD).to.equal(before - 2_500);
    // the merchant sees it among the payment's refunds
    const list = await shop.client.get(`/v1/payments/${id}/refunds`);
    expect(list.body.data.map((r: any) => [r.id, r.status])).to.deep.equal([[res.body.id, 'succeeded']]);
    expect((await acquirerView(id)).sandbox.refunded).to.equal(2_500);
  });

  it('refunds in two parts: the payment stays succeeded, then is refunded; nothing more can be refunded', async () => {
    const id = await paid(5_000);
    const first = await refund(id, { amount: 1_200 });
    expect(first.status).to.equal(201);
    expect(first.body.amount).to.equal(1_200);
    expect(await paymentOf(id)).to.include({ status: 'succeeded', amount_refunded: 1_200 });
    const rest = await refund(id, {});
    expect(rest.status).to.equal(201);
    expect(rest.body.amount, 'the default is what is left').to.equal(3_800);
    expect(await paymentOf(id)).to.include({ status: 'refunded', amount_refunded: 5_000 });
    for (const r of [first.body.id, rest.body.id]) expect((await refundDone(r)).status).to.equal('succeeded');
    const more = await refund(id, { amount: 1 });
    expect(more.status).to.equal(422);
    expect(more.body.error.code).to.equal('payment-not-refundable');
    expect(await refundRows(id)).to.have.length(2);
    expect((await acquirerView(id)).sandbox.refunded).to.equal(5_000);
  });

  it('replays a request with the same Idempotency-Key: one refund, the same answer; another body is 409', async () => {
    const id = await paid(3_000);
    const key = randomUUID();
    const before = (await balanceOf(shop.client)).available.USD;
    const first = await refund(id, { amount: 1_000 }, key);
    expect(first.status).to.equal(201);
    const again = await Promise.all([refund(id, { amount: 1_000 }, key), refund(id, { amount: 1_000 }, key)]);
    for (const a of again) {
      expect(a.status).to.equal(201);
      expect(a.headers.get('idempotent-replayed')).to.equal('true');
      expect(a.body).to.deep.equal(first.body);
    }
    const other = await refund(id, { amount: 500 }, key);
    expect(other.status).to.equal(409);
    expect(other.body.error.code).to.equal('idempotency-conflict');
    expect(await refundRows(id)).to.have.length(1);
    expect((await balanceOf(shop.client)).available.USD).to.equal(before - 1_000);
    await refundDone(first.body.id);
    expect((await acquirerView(first.body.id)).sandbox.requests).to.equal(1);
  });

  it('refuses without an Idempotency-Key (400), with a bad one (400), and without the admin token (401)', async () => {
    const id = await paid(1_000);
    const none = await refund(id, {}, null);
    expect(none.status).to.equal(400);
    expect(none.body.error.code).to.equal('idempotency-key-required');
    const bad = await refund(id, {}, 'not-a-uuid');
    expect(bad.status).to.equal(400);
    expect(bad.body.error.code).to.equal('idempotency-key-invalid');
    const stranger = await refund(id, {}, randomUUID(), 'wrong-token-0123456789');
    expect(stranger.status).to.equal(401);
    expect(stranger.body.error.code).to.equal('auth-required');
    const field = await refund(id, { amount: 0 });
    expect(field.status).to.equal(400);
    expect(field.body.error).to.include({ code: 'validation-failed', param: 'amount' });
    const unknown = await refund(`pay_${randomUUID()}`, {});
    expect(unknown.status).to.equal(404);
    expect(await refundRows(id)).to.have.length(0);
    expect(await paymentOf(id)).to.include({ status: 'succeeded', amount_refunded: 0 });
  });

  it('refuses more than is left (422 refund-exceeds-refundable) and changes nothing', async () => {
    const id = await paid(2_000);
    const before = await balanceOf(shop.client);
    const res = await refund(id, { amount: 2_001 });
    expect(res.status).to.equal(422);
    expect(res.body.error).to.include({ code: 'refund-exceeds-refundable', param: 'amount' });
    expect(await refundRows(id)).to.have.length(0);
    expect(await balanceOf(shop.client)).to.deep.equal(before);
    expect(await paymentOf(id)).to.include({ status: 'succeeded', amount_refunded: 0 });
  });

  it('refuses a card payment not succeeded (422 payment-not-refundable)', async () => {
    const p = await createCardPayment(shop.client, { amount: 1_500 });
    const res = await refund(p.id, {});
    expect(res.status).to.equal(422);
    expect(res.body.error.code).to.equal('payment-not-refundable');
    expect(await refundRows(p.id)).to.have.length(0);
  });

  it('refuses a mobile-money payment (422 payment-not-refundable): its merchant refunds it through the API', async () => {
    const p = await aSucceededPayment(shop.client, { amount: 4_000 });
    const before = await balanceOf(shop.client);
    const res = await refund(p.id, {});
    expect(res.status).to.equal(422);
    expect(res.body.error.code).to.equal('payment-not-refundable');
    expect(res.body.error.message).to.contain('/v1/payments/{id}/refund');
    expect(await refundRows(p.id)).to.have.length(0);
    expect(await balanceOf(shop.client)).to.deep.equal(before);
  });

  it('an unknown outcome (the acquirer answers 503 after making the refund) stays pending, is asked again with the same id, and succeeds once', async () => {
    // 4000000000000077: the acquirer's first answer to a refund of this card's payment is lost
    const id = await paid(3_300, '4000000000000077');
    const before = (await balanceOf(shop.client)).available.USD;
    const res = await refund(id, { amount: 3_300 });
    expect(res.status).to.equal(201);
    const row = await refundDone(res.body.id);
    expect(row.status).to.equal('succeeded');
    // never failed on the way: pending until the acquirer's outcome
    expect((await history(res.body.id)).map((h) => h.to_status)).to.deep.equal(['pending', 'succeeded']);
    const atAcquirer = await acquirerView(res.body.id);
    expect(atAcquirer).to.include({ kind: 'refund', status: 'succeeded' });
    expect(atAcquirer.sandbox.requests, 'asked again with the same refund id').to.equal(2);
    expect((await acquirerView(id)).sandbox.refunded, 'one refund at the acquirer').to.equal(3_300);
    expect((await postings(res.body.id)).sort()).to.deep.equal(['refund_debit', 'refund_deliver']);
    expect((await balanceOf(shop.client)).available.USD).to.equal(before - 3_300);
    expect((await eventsOf(res.body.id)).map((e) => e.type)).to.deep.equal(['refund.succeeded']);
    expect(await paymentOf(id)).to.include({ status: 'refunded', amount_refunded: 3_300 });
  });

  it('the merchant API still refuses card refunds: 422 card-refund-not-supported', async () => {
    const id = await paid(1_000);
    const res = await shop.client.post(`/v1/payments/${id}/refund`, {});
    expect(res.status).to.equal(422);
    expect(res.body.error.code).to.equal('card-refund-not-supported');
    expect(await refundRows(id)).to.have.length(0);
  });
});
