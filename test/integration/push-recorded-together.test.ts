import { expect } from 'chai';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { findOperations } from '../../shared/db/sql/operationReads';
import { writeOperations } from '../../shared/operations/writer';
import type { OperationWrite } from '../../shared/operations/operationWrite';
import { refundKind } from '../../shared/refunds/kind';
import { mobileMoneyPaymentKind } from '../../shared/payments/kind';
import { aPayment } from '../helpers/money';

/**
 * The pushes of concurrent jobs are recorded by the writer in one statement (shared/operations/writer.ts): each row of
 * the batch is still its own compare-and-set, so a stale one, a sent one or an id given twice
 * changes nothing of its own while the others are written.
 */
describe('provider acceptances recorded together', () => {
  let env: TestEnv;
  let client: Awaited<ReturnType<TestEnv['merchant']>>['client'];
  const db = () => env.services.db;

  before(async () => {
    env = await startTestEnv();
    client = (await env.merchant({ scope: 'full' })).client;
  });
  after(() => env.close());

  /** The writer's form of a push's acceptance (a stay, written only while the row is unsent). */
  const record = (
    p: { id: string; status: string; version: number },
    ref: string,
    version = p.version,
  ): OperationWrite => ({
    id: p.id,
    from: { status: p.status, version },
    unsent: true,
    patch: { sent_at: new Date(), provider_ref: ref, version: version + 1, updated_at: new Date() },
    history: null,
    environment: 'test',
    event: null,
    deliveries: [],
    outbox: [],
    posting: null,
  });
  const recordSent = (ws: OperationWrite[]) => writeOperations(db(), mobileMoneyPaymentKind.sql, ws);

  it('writes each compare-and-set of a batch on its own, in order', async () => {
    const [a, b, c, d] = await Promise.all([1, 2, 3, 4].map((i) => aPayment(client, { phone: `24399000000${i}` })));
    const rows = await db()('payments').whereIn('id', [a.id, b.id, c.id, d.id]).select('id', 'status', 'version');
    const row = (id: string) => rows.find((r) => r.id === id)!;
    // d was sent already: a second acceptance must not overwrite its reference
    expect(await recordSent([record(row(d.id), 'REF-D')])).to.deep.equal([true]);

    const written = await recordSent([
      record(row(a.id), 'REF-A'),
      record(row(b.id), 'REF-B-STALE', row(b.id).version + 5), // read at another version
      record(row(c.id), 'REF-C'),
      record(row(c.id), 'REF-C-AGAIN'), // the same payment twice in one batch: the first wins
      record(row(d.id), 'REF-D-AGAIN'),
      record({ id: 'pay_doesnotexist0000000000', status: 'processing', version: 1 }, 'REF-X'),
    ]);
    expect(written).to.deep.equal([true, false, true, false, false, false]);

    const after = await db()('payments')
      .whereIn('id', [a.id, b.id, c.id, d.id])
      .select('id', 'provider_ref', 'version', 'sent_at');
    const by = (id: string) => after.find((r) => r.id === id)!;
    expect(by(a.id)).to.include({ provider_ref: 'REF-A', version: row(a.id).version + 1 });
    expect(by(a.id).sent_at).to.be.instanceOf(Date);
    expect(by(b.id)).to.include({ provider_ref: null, version: row(b.id).version, sent_at: null });
    expect(by(c.id)).to.include({ provider_ref: 'REF-C', version: row(c.id).version + 1 });
    expect(by(d.id)).to.include({ provider_ref: 'REF-D', version: row(d.id).version + 1 });
  });

  it('reads the rows of concurrent pushes in one statement, in the order asked, of its own kind only', async () => {
    const [a, b] = await Promise.all([5, 6].map((i) => aPayment(client, { phone: `24399000000${i}` })));
    const found = await findOperations<{ id: string; amount: number }>(db(), mobileMoneyPaymentKind.sql, [
      b.id,
      'pay_doesnotexist0000000000',
      a.id,
      b.id,
    ]);
    expect(found.map((r) => r?.id)).to.deep.equal([b.id, undefined, a.id, b.id]);
    expect(found[2]).to.include({ amount: 10_000, phone: '243990000005' });
    // a payment's id asked of the refunds' table finds nothing
    expect(await findOperations(db(), refundKind.sql, [a.id])).to.deep.equal([undefined]);
  });
});
