import { expect } from 'chai';
import type { TestEnv } from '../helpers/env';
import { aMerchant, aSucceededPayment, POOLS, startMoneyEnv, waitFor } from '../helpers/money';
import { checkLedger } from '../../shared/ledger/check';

describe('GET /v1/balance', () => {
  let env: TestEnv;

  before(async () => {
    // no refund pool at first: a refund stays pending until the test starts one
    env = await startMoneyEnv(
      {},
      POOLS.filter((p) => p !== 'workers/refund/index.ts'),
    );
  });
  after(async () => {
    expect(await checkLedger(env.services.db), 'ledger:check after the balance file').to.deep.equal([]);
    await env.close();
  });

  it('shows available and pending per currency for the key environment, from the ledger', async () => {
    const { client, merchant } = await aMerchant(env, {
      fees: { USD: { percent_bps: 200, fixed: 0 }, CDF: { percent_bps: 0, fixed: 100 } },
    });
    const empty = await client.get('/v1/balance');
    expect(empty.status).to.equal(200);
    expect(empty.body).to.deep.equal({
      object: 'balance',
      environment: 'test',
      available: [
        { currency: 'USD', amount: 0 },
        { currency: 'CDF', amount: 0 },
      ],
      pending: [
        { currency: 'USD', amount: 0 },
        { currency: 'CDF', amount: 0 },
      ],
    });

    const usd = await aSucceededPayment(client, { amount: 10_000 }); // net 9 800
    await aSucceededPayment(client, { currency: 'CDF', amount: 60_000 }); // net 59 900

    // a refund waits for the (stopped) refund pool; a payout to 243990000004 never gets an answer
    const refund = await client.post(`/v1/payments/${usd.id}/refund`, { amount: 3_000 });
    expect(refund.status).to.equal(201);
    const payout = await client.post('/v1/payouts', {
      amount: 20_000,
      currency: 'CDF',
      operator: 'orange',
      phone: '243990000004',
      reference: 'stuck',
    });
    expect(payout.status).to.equal(201);
    expect(payout.body.fee).to.equal(100);

    const res = await client.get('/v1/balance');
    expect(res.body).to.deep.equal({
      object: 'balance',
      environment: 'test',
      available: [
        { currency: 'USD', amount: 6_800 },
        { currency: 'CDF', amount: 39_800 },
      ],
      pending: [
        { currency: 'USD', amount: 3_000 },
        { currency: 'CDF', amount: 20_100 },
      ],
    });

    // the balance is what the ledger says: every account equals the sum of its entries
    const accounts = await env.services
      .db('ledger_accounts')
      .where({ owner: merchant.id })
      .select('kind', 'currency', 'balance');
    expect(
      accounts
        .filter((a) => a.kind === 'available')
        .map((a) => [a.currency, a.balance])
        .sort(),
    ).to.deep.equal([
      ['CDF', 39_800],
      ['USD', 6_800],
    ]);
    expect(await checkLedger(env.services.db)).to.deep.equal([]);

    // once a refund pool runs, the refund goes out: pending drops, available stays
    await env.spawn('workers/refund/index.ts');
    await waitFor(client, `/v1/payments/${usd.id}/refunds`, (b) => b.data[0].status === 'succeeded');
    const after = (await client.get('/v1/balance')).body;
    expect(after.available).to.deep.equal(res.body.available);
    expect(after.pending).to.deep.equal([
      { currency: 'USD', amount: 0 },
      { currency: 'CDF', amount: 20_100 },
    ]);
  });

  it('is per merchant and per environment; a read key may see it', async () => {
    const { client, merchant } = await aMerchant(env);
    await aSucceededPayment(client, { amount: 1_234 });
    const read = await env.admin('POST', `/admin/merchants/${merchant.id}/credentials`, {
      environment: 'test',
      scope: 'read',
    });
    const live = await env.admin('POST', `/admin/merchants/${merchant.id}/credentials`, {
      environment: 'live',
      scope: 'full',
    });
    const Client = client.constructor as any;
    const asRead = await new Client({ baseUrl: env.baseUrl, apiKey: read.body.api_key, secret: read.body.secret }).get(
      '/v1/balance',
    );
    expect(asRead.status).to.equal(200);
    expect(asRead.body.available).to.deep.equal([
      { currency: 'USD', amount: 1_234 },
      { currency: 'CDF', amount: 0 },
    ]);
    const asLive = await new Client({ baseUrl: env.baseUrl, apiKey: live.body.api_key, secret: live.body.secret }).get(
      '/v1/balance',
    );
    expect(asLive.body).to.include({ environment: 'live' });
    expect(asLive.body.available).to.deep.equal([
      { currency: 'USD', amount: 0 },
      { currency: 'CDF', amount: 0 },
    ]);
    const stranger = await aMerchant(env);
    expect((await stranger.client.get('/v1/balance')).body.available[0]).to.deep.equal({ currency: 'USD', amount: 0 });
    expect((await client.get('/v1/balance', { headers: { Authorization: 'Bearer svc_test_nope' } })).status).to.equal(
      401,
    );
  });
});
