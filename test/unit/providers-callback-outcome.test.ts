import { expect } from 'chai';
import {
  callbackAppliedSql,
  callbackUnprocessedSql,
  markCallbacksStatement,
} from '../../shared/providers/callbackOutcome';

/** shared/providers/callbackOutcome.ts: a stored callback is applied at most once. */

const tables = {
  name: 'callback_outcome_test',
  table: 'payments',
  scope: { method: 'card' },
  history: { table: 'payment_status_changes', column: 'payment_id' },
  columns: ['id'],
  insertOrder: 'id',
};

describe('the callback outcome part (shared/providers/callbackOutcome.ts)', () => {
  it('marks applied only the callbacks of the rows written, and only while unprocessed', () => {
    const sql = callbackAppliedSql('m');
    expect(sql).to.match(/^update provider_callbacks pc set processed_at = now\(\), outcome = 'applied' from m /);
    expect(sql).to.contain('where pc.id = m.callback_id');
    expect(sql).to.match(/and pc\.processed_at is null$/);
  });

  it('guards a write carrying a callback: refused once the callback is processed', () => {
    expect(callbackUnprocessedSql('x.callback_id')).to.equal(
      'not exists (select 1 from provider_callbacks pc where pc.id = x.callback_id and pc.processed_at is not null)',
    );
  });

  it('marks a repeat or a late report only while unprocessed and while its row has the status and version read', () => {
    const { name, text } = markCallbacksStatement(tables);
    expect(name).to.equal('mark-callbacks-callback_outcome_test');
    expect(text).to.contain('outcome = x.outcome');
    expect(text).to.contain('pc.processed_at is null');
    expect(text).to.contain('exists (select 1 from payments o');
    expect(text).to.contain(
      "o.id = x.id and o.status = x.from_status and o.version = x.from_version and o.method = 'card'",
    );
  });

  it('refuses a table name that is not plain', () => {
    expect(() => markCallbacksStatement({ ...tables, name: 'x2', table: 'payments; drop table x' })).to.throw(/plain/);
  });
});
