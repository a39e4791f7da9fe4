import { expect } from 'chai';
import { keyRow } from '../../shared/idempotency';
import { KEY_COLUMNS, takeKeysSql } from '../../shared/idempotencySql';
import { keyedSignaturesSql, signedWithKeySql, takeSignaturesSql } from '../../shared/requestSignaturesSql';

/** shared/idempotencySql.ts and shared/requestSignaturesSql.ts: the writer's keyed creation (`k`, `s`). */

const columnsOf = (recordset: string) => recordset.split(',').map((c) => c.trim().split(/\s+/)[0]);

describe('the idempotency key and signature parts', () => {
  it('reads every column of a key row (keyRow) from the keyed creation', () => {
    const row = keyRow(
      {
        id: { merchantId: 'mer_1', environment: 'test', key: '00000000-0000-4000-8000-000000000001' },
        request: { method: 'POST', path: '/v1/payments', hash: 'h' },
        waitMs: 2000,
        now: 1_700_000_000_000,
        encode: () => ({ status: 201, headers: {}, body: Buffer.from('{}') }),
        signature: { signature: 'ab', expires: 1_700_000_300 },
      },
      null,
    );
    expect([...columnsOf(KEY_COLUMNS)].sort()).to.deep.equal(Object.keys(row).sort());
  });

  it('takes keys in key order, a held key (not expired, not abandoned) not taken', () => {
    const sql = takeKeysSql('src x');
    expect(sql).to.contain('from src x order by merchant_id, environment, key');
    expect(sql).to.contain('on conflict (merchant_id, environment, key) do update');
    expect(sql).to.contain('where k.expires_at <= excluded.created_at');
    expect(sql).to.match(/returning k\.merchant_id, k\.environment, k\.key$/);
  });

  it('takes signatures in key order, once each, with the key they came with', () => {
    const sql = takeSignaturesSql(keyedSignaturesSql('x'));
    expect(sql).to.contain('key::text as key, signature_expires as expires from x where signature is not null) x');
    expect(sql).to.contain('order by merchant_id, environment, signature');
    expect(sql).to.contain('on conflict (merchant_id, environment, signature) do nothing');
  });

  it('lets a key be taken only if its signature is none, or was taken with this very key', () => {
    const sql = signedWithKeySql('s');
    expect(sql).to.match(/^signature is null/);
    expect(sql).to.contain('exists (select 1 from s where s.merchant_id = x.merchant_id');
    expect(sql).to.contain('s.idempotency_key = x.key::text');
    expect(sql).to.contain('exists (select 1 from request_signatures r where');
    expect(sql).to.contain('r.idempotency_key = x.key::text');
  });
});
