/**
 * `npm run sql:statements`: writes every statement of the operations kernel, each kind's reads,
 * the writer's four shapes and a callback's mark, laid out one clause a line, to
 * shared/operations/statements.sql (committed; test/unit/operations-statements.test.ts fails while
 * it is stale), so that a change to the write path is read as an SQL diff. Needs no database.
 */
import { writeFileSync } from 'node:fs';
import { renderStatements, STATEMENTS_FILE } from './lib/statements-file';

writeFileSync(STATEMENTS_FILE, renderStatements());
process.stdout.write(`wrote ${STATEMENTS_FILE}\n`);
