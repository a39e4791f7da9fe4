import { expect } from 'chai';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';
import { newId } from '../../shared/ids';
import { paymentCredit, type Currency } from '../../shared/rules/ledger';
import { foldCredits, post } from '../../shared/ledger/postings';
import { settle } from '../../shared/settlements/settle';
import { checkLedger } from '../../shared/ledger/check';

/**
 * docs/decisions.md#faults-and-limits: balances and settlement sums are exact whatever their size,
 * and one merchant's data never stops another's settlement. A balance above 2^53 is written
 * straight into the ledger (no request may carry more than 10^12 minor units).
 */
describe('amounts beyond the safe integers', () => {
  let env: TestEnv;
  let rich: MerchantFixture;
  let plain: MerchantFixture;
  const db = () => env.services.db;
  const HALF = 2 ** 52 + 1; // a safe integer; two of them pass 2^53
  const TOTAL = 2n * BigInt(HALF); // 9007199254740994: above Number.MAX_SAFE_INTEGER

  const credit = (merchantId: string, amountCharged: number, fee = 0, currency: Currency = 'USD') =>
    db().transaction((trx) =>
      post(
        trx,
        paymentCredit({
          merchantId,
          environment: 'test',
          currency,
          paymentId: newId('payment'),
          amountCharged,
          amountNet: amountCharged - fee,
          fee,
        }),
      ),
    );
  const rawBalance = async (m: MerchantFixture) => {
    const res = await fetch(`${env.baseUrl}/v1/balance`, {
      headers: { Authorization: `Bearer ${m.credential.api_key}` },
    });
    return { status: res.status, text: await res.text() };
  };

  before(async () => {
    env = await startTestEnv();
    rich = await env.merchant({ scope: 'full' });
    plain = await env.merchant({ scope: 'full' });
    await credit(rich.merchant.id, HALF);
    await credit(rich.merchant.id, HALF);
    await credit(plain.merchant.id, 10_000, 250);
  });
  after(async () => env.close());

  it('answers GET /v1/balance with the exact balance, unfolded credits and folded alike', async () => {
    const expected = `{"object":"balance","environment":"test","available":[{"currency":"USD","amount":${TOTAL}},{"currency":"CDF","amount":0}],"pending":[{"currency":"USD","amount":0},{"currency":"CDF","amount":0}]}`;
    const unfolded = await rawBalance(rich);
    expect(unfolded.status, unfolded.text).to.equal(200);
    expect(unfolded.text).to.equal(expected);
    // folded into the cached balance column (bigint, above 2^53)
    while ((await foldCredits(db())) > 0);
    const [account] = await db()('ledger_accounts')
      .where({ owner: rich.merchant.id, kind: 'available', currency: 'USD' })
      .select(db().raw('balance::text as balance'));
    expect(account.balance).to.equal(TOTAL.toString());
    const folded = await rawBalance(rich);
    expect(folded.status).to.equal(200);
    expect(folded.text).to.equal(expected);
    expect((await plain.client.get('/v1/balance')).body.available[0]).to.deep.equal({ currency: 'USD', amount: 9_750 });
  });

  it('still takes money out of that balance (the checks run in Postgres)', async () => {
    const res = await rich.client.post('/v1/payouts', {
      amount: 1_000,
      currency: 'USD',
      operator: 'vodacom',
      phone: '243990000001',
      reference: 'from-a-big-balance',
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const after = await rawBalance(rich);
    expect(after.text).to.include(`"available":[{"currency":"USD","amount":${TOTAL - 1_000n}}`);
    expect(after.text).to.include(`"pending":[{"currency":"USD","amount":1000}`);
  });

  it('settles every merchant, the exact figures of a huge one included, while one group’s failure is logged and skipped', async () => {
    // a group whose batch cannot be written: ledger postings of a merchant id with no merchant row
    const ghost = newId('merchant');
    await credit(ghost, 500);
    const tomorrow = Math.floor(Date.now() / 1000) + 86_400;
    const made = await settle(
      { db: db(), outbox: env.services.outbox, clock: env.services.clock, log: env.services.log },
      { now: tomorrow },
    );
    expect(made).to.have.length(2);
    const rows = await db()('settlements').select(
      'merchant_id',
      'id',
      db().raw('gross::text as gross'),
      db().raw('net::text as net'),
      db().raw('payouts::text as payouts'),
      'count',
    );
    expect(rows.map((r) => r.merchant_id).sort()).to.deep.equal([rich.merchant.id, plain.merchant.id].sort());
    const big = rows.find((r) => r.merchant_id === rich.merchant.id)!;
    expect(big).to.include({ gross: TOTAL.toString(), payouts: '1000', net: (TOTAL - 1_000n).toString(), count: 3 });
    expect(rows.find((r) => r.merchant_id === plain.merchant.id)).to.include({ gross: '10000', net: '9750', count: 1 });
    // the ghost's transaction waits for a later run, unsettled
    expect(
      (await db()('ledger_transactions').where({ merchant_id: ghost }).first('settlement_id')).settlement_id,
    ).to.equal(null);

    // the API and the stored event carry every digit
    const res = await fetch(`${env.baseUrl}/v1/settlements/${big.id}`, {
      headers: { Authorization: `Bearer ${rich.credential.api_key}` },
    });
    const text = await res.text();
    expect(res.status, text).to.equal(200);
    expect(text).to.include(`"gross":${TOTAL},"fees":0,"refunds":0,"payouts":1000,"net":${TOTAL - 1_000n},"count":3`);
    const list = await fetch(`${env.baseUrl}/v1/settlements`, {
      headers: { Authorization: `Bearer ${rich.credential.api_key}` },
    });
    expect(await list.text()).to.include(`"gross":${TOTAL},`);
    const [event] = await db()('events')
      .where({ object_id: big.id })
      .select(db().raw(`body->'data'->'object'->>'gross' as gross`));
    expect(event.gross).to.equal(TOTAL.toString());
    expect(await checkLedger(db())).to.deep.equal([]);
  });
});
