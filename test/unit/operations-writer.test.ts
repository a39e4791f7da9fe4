import { expect } from 'chai';
import { operationSql } from '../../shared/operations/writer';

/** shared/operations/writer.ts: one statement per shape, composed of its owners' parts in one order. */

const sql = operationSql({
  name: 'writer_test',
  table: 'payments',
  history: { table: 'payment_status_changes', column: 'payment_id' },
  columns: ['id', 'merchant_id', 'environment', 'status', 'version'],
  insertOrder: 'merchant_id, environment, id',
});
/** A statement's CTEs, in order. */
const ctes = (text: string) => [...text.matchAll(/(?:^with |,\s+)([a-z]+) as (?:materialized )?\(/g)].map((m) => m[1]);

describe('the writer (shared/operations/writer.ts)', () => {
  it('composes each shape of the parts it writes, in one order, and nothing else', () => {
    expect(ctes(sql.change.text)).to.deep.equal(['x', 'm', 'h', 'ob', 'ev', 'e', 'd', 'lt', 'le', 'c']);
    expect(ctes(sql.changeRow.text)).to.deep.equal(['x', 'm']);
    expect(ctes(sql.create.text)).to.deep.equal(['x', 'm', 'h', 'ob']);
    expect(ctes(sql.createKeyed.text)).to.deep.equal(['x', 's', 'k', 'm', 'h', 'ob']);
  });

  it('joins every part of a change to what it wrote (m), so a refused write writes nothing of its own', () => {
    const text = sql.change.text;
    expect(text).to.contain('join m on m.id = x.object_id) o'); // the outbox rows
    expect(text).to.contain('join m on m.id = v.object_id'); // the events, and through them the deliveries
    expect(text).to.contain('join m on m.id = x.object_id\n'); // the credit, and through it its entries
    expect(text).to.contain("outcome = 'applied' from m where pc.id = m.callback_id"); // the callback
    expect(text).to.contain('from m where to_status is not null'); // the history
  });

  it('changes a row only while it has the status and version read, and its callback is unprocessed', () => {
    for (const text of [sql.change.text, sql.changeRow.text]) {
      expect(text).to.contain('o.status = x.from_status and o.version = x.from_version');
      expect(text).to.contain('pc.id = x.callback_id and pc.processed_at is not null');
    }
  });

  it('inserts a keyed creation only if its key was taken', () => {
    expect(sql.createKeyed.text).to.contain('where exists (select 1 from k where k.merchant_id = x.merchant_id');
    expect(sql.create.text).not.to.contain('from k');
  });
});
