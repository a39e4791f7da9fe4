import { resolve } from 'node:path';
import { KINDS } from '../../shared/kindRegistry';
import type { SqlStatement } from '../../shared/db/sql/run';
import { formatSql } from './sql-format';

/**
 * shared/operations/statements.sql: every statement of the operations kernel, rendered from the
 * kinds (shared/kindRegistry.ts) as Postgres receives them, laid out by scripts/lib/sql-format.ts.
 * Written by `npm run sql:statements`; test/unit/operations-statements.test.ts fails while it is stale.
 */

export const STATEMENTS_FILE = resolve(__dirname, '../../shared/operations/statements.sql');

const HEADER = `-- The statements of the operations kernel, as Postgres receives them, one clause a line.
-- Generated: \`npm run sql:statements\` (scripts/sql-statements.ts) renders them from each kind
-- (shared/kindRegistry.ts), its reads (shared/db/sql/operationReads.ts), the writer's four shapes
-- (shared/operations/writer.ts, composed of the parts their owner modules write) and a repeat's
-- or a late report's mark (shared/providers/callbackOutcome.ts). Do not edit it by hand: change
-- the fragments and run the script; test/unit/operations-statements.test.ts fails while it is stale.
-- Only whitespace differs from the statements' text.
`;

/** The kernel's statements: [kind, its statements by the name the kind's sql gives them]. */
export function kernelStatements(): [string, [string, SqlStatement][]][] {
  return Object.values(KINDS).map((kind) => [
    kind.name,
    Object.entries(kind.sql).filter(
      (e): e is [string, SqlStatement] => typeof (e[1] as SqlStatement).text === 'string',
    ),
  ]);
}

export function renderStatements(): string {
  const parts = [HEADER];
  for (const [kind, statements] of kernelStatements()) {
    parts.push(`\n-- ${'='.repeat(96)}\n-- ${kind}\n-- ${'='.repeat(96)}\n`);
    for (const [key, s] of statements) parts.push(`\n-- ${kind}.sql.${key}: ${s.name}\n${formatSql(s.text)};\n`);
  }
  return parts.join('');
}
