import { expect } from 'chai';
import type { TestEnv, MerchantFixture } from '../helpers/env';
import { aMerchant, aSucceededPayment, startMoneyEnv, waitFor } from '../helpers/money';
import { settle } from '../../shared/settlements/settle';
import { checkLedger } from '../../shared/ledger/check';

/**
 * Statements (docs/decisions.md#integrators-kit): GET /v1/settlements/{id}/transactions and the
 * CSV export GET /v1/reports/transactions.csv, over money moved by the real flows (sandbox
 * provider, every pool): payments, a refund, a payout and a failed payout given back.
 */
describe('statements: settlement lines and the CSV export', function () {
  this.timeout(90_000);
  let env: TestEnv;
  let shop: MerchantFixture;
  let reader: MerchantFixture['client'];
  let startedAt: number;
  const ids: Record<string, string> = {};
  let batch: any;

  before(async () => {
    env = await startMoneyEnv();
    shop = await aMerchant(env, { fees: { USD: { percent_bps: 250, fixed: 10 }, CDF: { percent_bps: 0, fixed: 0 } } });
    const read = await env.admin('POST', `/admin/merchants/${shop.merchant.id}/credentials`, {
      environment: 'test',
      scope: 'read',
    });
    reader = env.client(read.body); // contract-checked like every merchant client
    startedAt = Math.floor(Date.now() / 1000);

    // fee 2.5 % + 10: 10,000 → fee 260, net 9,740; 4,000 → 110, 3,890
    const p1 = await aSucceededPayment(shop.client, { amount: 10_000, reference: 'order, "one"' });
    const p2 = await aSucceededPayment(shop.client, { amount: 4_000, reference: '=HYPERLINK("x")' });
    ids.p1 = p1.id;
    ids.p2 = p2.id;
    const refund = await shop.client.post(`/v1/payments/${p1.id}/refund`, { amount: 1_000 });
    expect(refund.status).to.equal(201);
    ids.refund = refund.body.id;
    const payout = await shop.client.post('/v1/payouts', {
      amount: 2_000,
      currency: 'USD',
      operator: 'vodacom',
      phone: '243990000001',
      reference: 'po-ok',
    });
    expect(payout.status, JSON.stringify(payout.body)).to.equal(201);
    ids.payout = payout.body.id;
    // 243990000005: the sandbox fails any payout to it, so its debit is given back
    const failing = await shop.client.post('/v1/payouts', {
      amount: 500,
      currency: 'USD',
      operator: 'vodacom',
      phone: '243990000005',
      reference: 'po-ko',
    });
    expect(failing.status).to.equal(201);
    ids.failing = failing.body.id;
    await waitFor(shop.client, `/v1/payments/${p1.id}/refunds`, (b) => b.data[0]?.status === 'succeeded');
    await waitFor(shop.client, `/v1/payouts/${ids.payout}`, (b) => b.status === 'succeeded');
    await waitFor(shop.client, `/v1/payouts/${ids.failing}`, (b) => b.status === 'failed');

    await settle(
      { db: env.services.db, outbox: env.services.outbox, log: env.services.log, clock: env.services.clock },
      { now: Math.floor(Date.now() / 1000) + 86_400 },
    );
    const listed = await reader.get('/v1/settlements');
    batch = listed.body.data.find((b: any) => b.currency === 'USD');
    expect(batch, JSON.stringify(listed.body)).to.be.an('object');
  });
  after(async () => {
    expect(await checkLedger(env.services.db)).to.deep.equal([]);
    await env.close();
  });

  const expectedLines = () => [
    { type: 'payment', source_id: ids.p1, amount: 10_000, fee: 260, net: 9_740 },
    { type: 'payment', source_id: ids.p2, amount: 4_000, fee: 110, net: 3_890 },
    { type: 'refund', source_id: ids.refund, amount: -1_000, fee: 0, net: -1_000 },
    // a payout's fee is the merchant's rule on its amount: 2,000 → 60; 500 → 23 (22.5 rounded half up, + 10)
    { type: 'payout', source_id: ids.payout, amount: -2_000, fee: 60, net: -2_060 },
    { type: 'payout', source_id: ids.failing, amount: -500, fee: 23, net: -523 },
    { type: 'payout_reversal', source_id: ids.failing, amount: 500, fee: -23, net: 523 },
  ];
  const key = (l: any) => `${l.type}/${l.source_id}`;

  it('lists the ledger lines a settlement covers, newest first, whose nets sum to the batch net', async () => {
    const res = await reader.get(`/v1/settlements/${batch.id}/transactions`);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ object: 'list', has_more: false, next_cursor: null });
    const lines = res.body.data;
    expect(lines).to.have.length(batch.count);
    for (const l of lines) {
      expect(l).to.have.keys(['id', 'type', 'source_id', 'amount', 'fee', 'net', 'currency', 'created']);
      expect(l.currency).to.equal('USD');
      expect(l.net).to.equal(l.amount - l.fee);
    }
    expect(
      lines
        .map((l: any) => ({ type: l.type, source_id: l.source_id, amount: l.amount, fee: l.fee, net: l.net }))
        .sort((a: any, b: any) => key(a).localeCompare(key(b))),
    ).to.deep.equal(expectedLines().sort((a, b) => key(a).localeCompare(key(b))));
    expect(lines.reduce((s: number, l: any) => s + l.net, 0)).to.equal(batch.net);
    const created = lines.map((l: any) => l.created);
    expect(created).to.deep.equal([...created].sort((a, b) => b - a));
  });

  it('pages through the lines with limit and cursor, none skipped or repeated', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: any = await reader.get(
        `/v1/settlements/${batch.id}/transactions?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(res.status).to.equal(200);
      expect(res.body.data.length).to.be.at.most(2);
      seen.push(...res.body.data.map((l: any) => l.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).to.have.length(batch.count);
    expect(new Set(seen).size).to.equal(batch.count);
  });

  it('refuses another merchant’s batch or an unknown one (404) and bad paging (400)', async () => {
    const other = await aMerchant(env, {}, 'read');
    expect((await other.client.get(`/v1/settlements/${batch.id}/transactions`)).status).to.equal(404);
    expect((await reader.get('/v1/settlements/stl_00000000-0000-4000-8000-000000000000/transactions')).status).to.equal(
      404,
    );
    expect((await reader.get('/v1/settlements/nope/transactions')).status).to.equal(404);
    for (const q of ['limit=0', 'limit=101', 'cursor=abc', 'cursor=123.pay_x', 'status=x']) {
      const res = await reader.get(`/v1/settlements/${batch.id}/transactions?${q}`);
      expect(res.status, q).to.equal(400);
      expect(res.body.error.code).to.equal('validation-failed');
    }
  });

  const csv = (query: string, client = reader) => client.get(`/v1/reports/transactions.csv?${query}`);
  const parse = (text: string) => {
    // the fields this test writes never hold line breaks: a line is a row
    const rows = text.trimEnd().split('\n');
    return rows.map((r) => {
      const out: string[] = [];
      let cur = '';
      let quoted = false;
      for (let i = 0; i < r.length; i++) {
        const c = r[i];
        if (quoted) {
          if (c === '"' && r[i + 1] === '"') ((cur += '"'), i++);
          else if (c === '"') quoted = false;
          else cur += c;
        } else if (c === '"') quoted = true;
        else if (c === ',') (out.push(cur), (cur = ''));
        else cur += c;
      }
      out.push(cur);
      return out;
    });
  };

  it('exports the lines of a range as CSV: the header, one row per line with reference and status, quoted where needed', async () => {
    const res = await csv(`from=${startedAt - 5}&to=${Math.floor(Date.now() / 1000) + 5}`);
    expect(res.status, res.text).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).to.match(/^attachment; filename="transactions-\d+-\d+\.csv"$/);
    expect(res.text.split('\n')[0]).to.equal('created,type,id,source_id,reference,currency,amount,fee,net,status');
    expect(res.text).to.include('"order, ""one"""');
    expect(res.text).to.include(`"'=HYPERLINK(""x"")"`);
    const [header, ...rows] = parse(res.text);
    expect(header).to.deep.equal([
      'created',
      'type',
      'id',
      'source_id',
      'reference',
      'currency',
      'amount',
      'fee',
      'net',
      'status',
    ]);
    expect(rows).to.have.length(6);
    const byKey = new Map(rows.map((r) => [`${r[1]}/${r[3]}`, r]));
    for (const l of expectedLines()) {
      const r = byKey.get(key(l))!;
      expect(r, key(l)).to.be.an('array');
      expect(r.slice(5, 9)).to.deep.equal(['USD', String(l.amount), String(l.fee), String(l.net)]);
      expect(Number(r[0])).to.be.within(startedAt - 5, Math.floor(Date.now() / 1000) + 5);
    }
    expect(byKey.get(`payment/${ids.p1}`)!.slice(4)).to.deep.equal([
      'order, "one"',
      'USD',
      '10000',
      '260',
      '9740',
      'succeeded',
    ]);
    expect(byKey.get(`payment/${ids.p2}`)![4]).to.equal(`'=HYPERLINK("x")`);
    expect(byKey.get(`refund/${ids.refund}`)!.slice(4)).to.deep.equal([
      'order, "one"',
      'USD',
      '-1000',
      '0',
      '-1000',
      'succeeded',
    ]);
    expect(byKey.get(`payout/${ids.payout}`)!.slice(4)).to.deep.equal([
      'po-ok',
      'USD',
      '-2000',
      '60',
      '-2060',
      'succeeded',
    ]);
    expect(byKey.get(`payout_reversal/${ids.failing}`)!.slice(4)).to.deep.equal([
      'po-ko',
      'USD',
      '500',
      '-23',
      '523',
      'failed',
    ]);
    // oldest first
    const created = rows.map((r) => Number(r[0]));
    expect(created).to.deep.equal([...created].sort((a, b) => a - b));
    // the ids are the settlement lines' ids
    const lines = (await reader.get(`/v1/settlements/${batch.id}/transactions`)).body.data.map((l: any) => l.id).sort();
    expect(rows.map((r) => r[2]).sort()).to.deep.equal(lines);
  });

  it('a range with nothing in it, or another merchant’s key: the header alone', async () => {
    const empty = await csv(`from=${startedAt - 7200}&to=${startedAt - 3600}`);
    expect(empty.status).to.equal(200);
    expect(empty.text).to.equal('created,type,id,source_id,reference,currency,amount,fee,net,status\n');
    const other = await aMerchant(env, {}, 'read');
    const theirs = await csv(`from=${startedAt - 5}&to=${Math.floor(Date.now() / 1000) + 5}`, other.client);
    expect(theirs.text.trimEnd().split('\n')).to.have.length(1);
  });

  it('refuses reversed, too long, non-integer, missing or unknown range parameters with 400 validation-failed', async () => {
    const t = startedAt;
    const cases: [string, string][] = [
      [`from=${t}&to=${t - 1}`, 'to'],
      [`from=${t}&to=${t}`, 'to'],
      [`from=${t}&to=${t + 31 * 86_400 + 1}`, 'to'],
      [`from=${t}.5&to=${t + 10}`, 'from'],
      [`from=${t}&to=abc`, 'to'],
      [`from=-1&to=${t}`, 'from'],
      [`from=1e9&to=${t}`, 'from'],
      [`to=${t}`, 'from'],
      [`from=${t}`, 'to'],
      [`from=${t}&to=${t + 10}&currency=USD`, 'currency'],
      [`from=${t}&from=${t - 1}&to=${t + 10}`, 'from'],
    ];
    for (const [q, param] of cases) {
      const res = await csv(q);
      expect(res.status, q).to.equal(400);
      expect(res.body.error, q).to.include({ code: 'validation-failed', param });
    }
    expect((await csv(`from=${t}&to=${t + 31 * 86_400}`)).status).to.equal(200);
    expect((await fetch(`${env.baseUrl}/v1/reports/transactions.csv?from=${t}&to=${t + 10}`)).status).to.equal(401);
  });
});
