import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * One writer (docs/decisions.md#provider-operations). Every change of an operation's row (payments, refunds, payouts: its
 * creation, its status, any column) is written by one module, the kernel's writer
 * (shared/operations/writer.ts); the kernel decides, the writer writes. Every insert into the
 * outbox is built by the outbox's one insert (shared/db/sql/outbox.ts `outboxInsertSql`), composed
 * only into the writer's statement, the inbox's and a flow's job on its own. (The outbox's own
 * bookkeeping, marking rows enqueued and pruning them, stays with the outbox.)
 */

const ROOT = path.resolve(__dirname, '..', '..');
const WRITER = 'shared/operations/writer.ts';
const OUTBOX = 'shared/db/sql/outbox.ts';
/** The statements the outbox's insert may be part of: the writer's, the inbox's, and insertOutbox (in OUTBOX itself). */
const OUTBOX_INSERTERS = [OUTBOX, 'shared/db/sql/callbacks.ts', WRITER];

/** What writes an operation's row or inserts an outbox row, in any of the project's ways. */
const WRITES: { what: string; pattern: RegExp }[] = [
  { what: 'SQL insert into the outbox', pattern: /insert\s+into\s+outbox\b/i },
  { what: 'SQL write of an operation table', pattern: /\b(insert\s+into|update)\s+(payments|refunds|payouts)\b/i },
  {
    what: "SQL write of a table chosen at run time (an operation kind's)",
    pattern: /\b(insert\s+into|update)\s+\$\{/i,
  },
  { what: 'knex insert into the outbox', pattern: /\(\s*['"]outbox['"]\s*\)[^;]*?\.insert\(/ },
  {
    what: 'knex write of an operation table',
    pattern: /\(\s*['"](payments|refunds|payouts)['"]\s*\)[^;]*?\.(insert|update|increment|decrement|del|delete)\(/,
  },
  {
    what: "knex write of a kind's table",
    pattern: /\(\s*kind\.model\.tableName\s*\)[^;]*?\.(insert|update|increment|del|delete)\(/,
  },
  {
    what: 'model insert into the outbox',
    pattern: /\bOutboxRow\s*\.query\([^)]*\)[^;]*?\.(insert|insertGraph|upsertGraph)\(/,
  },
  {
    what: 'model write of an operation',
    pattern:
      /\b(Payment|Refund|Payout|kind\.model)\s*\.query\([^)]*\)[^;]*?\.(insert|patch|update|increment|decrement|upsertGraph|insertGraph|del|delete)\(/,
  },
];

/** The project's own modules (the SDK under shared/client is the merchants', and writes nothing). */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(ROOT, dir))) {
    const rel = path.join(dir, name);
    if (rel === path.join('shared', 'client') || rel === path.join('shared', 'db', 'migrations')) continue;
    if (statSync(path.join(ROOT, rel)).isDirectory()) out.push(...sources(rel));
    else if (/\.ts$/.test(name)) out.push(rel);
  }
  return out;
}

/** The writes a text holds, by kind of write. */
const writesIn = (text: string) => WRITES.filter((w) => w.pattern.test(text)).map((w) => w.what);

describe('one writer of operations and of the outbox', () => {
  it('finds every way of writing (the scan can fail)', () => {
    expect(writesIn("await trx('payments').where({ id }).update({ status: 'failed' })")).to.have.length(1);
    expect(writesIn('await Payment.query(trx).findById(id).patch({ status })')).to.have.length(1);
    expect(writesIn("await trx('outbox').insert(rows)")).to.have.length(1);
    expect(writesIn('await OutboxRow.query(trx).insert(rows)')).to.have.length(1);
    expect(writesIn("await kind.model.query(trx).whereIn('id', ids).patch({ asks: 1 })")).to.have.length(1);
    expect(writesIn('`update refunds set status = $1 where id = $2`')).to.have.length(1);
    expect(writesIn('`insert into outbox (id) values ($1)`')).to.have.length(1);
    expect(writesIn('await Payment.query(trx).where({ id }).first()')).to.deep.equal([]);
  });

  const files = () =>
    ['api', 'workers', 'shared']
      .flatMap(sources)
      .map((file) => ({ file: file.split(path.sep).join('/'), text: readFileSync(path.join(ROOT, file), 'utf8') }));

  it('is the kernel writer for operations, the outbox module for outbox rows, in api, workers and shared', () => {
    const writers = files()
      .map(({ file, text }) => ({ file, writes: writesIn(text) }))
      .filter((f) => f.writes.length > 0);
    expect(writers, JSON.stringify(writers, null, 1)).to.deep.equal([
      { file: OUTBOX, writes: ['SQL insert into the outbox'] },
      { file: WRITER, writes: ["SQL write of a table chosen at run time (an operation kind's)"] },
    ]);
  });

  it('composes the outbox insert only into the writer, the inbox and insertOutbox', () => {
    const users = files()
      .filter(({ text }) => /\boutboxInsertSql\b/.test(text))
      .map((f) => f.file)
      .sort();
    expect(users).to.deep.equal([...OUTBOX_INSERTERS].sort());
  });
});
