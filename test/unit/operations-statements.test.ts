import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { formatSql, sqlTokens } from '../../scripts/lib/sql-format';
import { kernelStatements, renderStatements, STATEMENTS_FILE } from '../../scripts/lib/statements-file';

/**
 * shared/operations/statements.sql is the kernel's statements as they are today (a change to the
 * write path is reviewed as an SQL diff), and its layout changes nothing but whitespace.
 */
describe('the kernel statements file (shared/operations/statements.sql)', () => {
  it('is what the kinds and the writer render today', () => {
    expect(
      readFileSync(STATEMENTS_FILE, 'utf8') === renderStatements(),
      'shared/operations/statements.sql is stale: run `npm run sql:statements`',
    ).to.equal(true);
  });

  it('holds every statement of every kind, the writer four shapes each', () => {
    const kinds = kernelStatements();
    expect(kinds.map(([k]) => k).sort()).to.deep.equal(['card_payment', 'payment', 'payout', 'refund']);
    for (const [, statements] of kinds)
      expect(statements.map(([key]) => key)).to.include.members([
        'create',
        'createKeyed',
        'change',
        'changeRow',
        'mark',
      ]);
  });

  it('lays each statement out without changing a token', () => {
    for (const [, statements] of kernelStatements())
      for (const [, s] of statements) {
        const formatted = formatSql(s.text);
        expect(sqlTokens(formatted).map((t) => t.text)).to.deep.equal(sqlTokens(s.text).map((t) => t.text));
        expect(formatted.split('\n').length).to.be.greaterThan(1);
      }
  });

  it('puts one clause a line, and one condition a line', () => {
    expect(
      formatSql('select a, b from t join u on u.id = t.id where t.x = 1 and (t.y = 2 or t.z = 3) order by a limit 5'),
    ).to.equal(
      [
        'select a, b',
        'from t',
        'join u on u.id = t.id',
        'where t.x = 1',
        '  and (t.y = 2 or t.z = 3)',
        'order by a',
        'limit 5',
      ].join('\n'),
    );
    expect(formatSql('with a as (select 1), b as (select 2) select * from a, b')).to.equal(
      ['with a as (select 1),', 'b as (select 2)', 'select *', 'from a, b'].join('\n'),
    );
  });
});
