import type { Executor } from '../db/knex';
import { runSql, sqlStatement, type SqlStatement } from '../db/sql/run';
import { OUTBOX_COLUMNS, outboxInsertSql, outboxRecords } from '../db/sql/outbox';
import { operationReads } from '../db/sql/operationReads';
import { plain, scopeSql, type OperationTables } from '../db/sql/operationTables';
import { EVENT_COLUMNS, insertEventsSql } from '../events/record';
import * as credit from '../ledger/credit';
import { callbackAppliedSql, callbackUnprocessedSql, markCallbacksStatement } from '../providers/callbackOutcome';
import { deliveryRecords, insertDeliveriesSql } from '../webhooks/fanout';
import { KEY_COLUMNS, takeKeysSql } from '../idempotencySql';
import { keyedSignaturesSql, signedWithKeySql, takeSignaturesSql } from '../requestSignaturesSql';
import type { OperationWrite } from './operationWrite';

/**
 * The writer of operations (payments, refunds, payouts): the one module that inserts or changes
 * their rows' status, and whose statement writes their outbox rows (test/unit/one-writer.test.ts).
 * The kernel decides (machine.ts, transition.ts: pure); this module carries the decision out. One
 * statement writes a batch, composed here of the parts their owners write, each a function of
 * its source that carries its own rules:
 *
 *   x   the writes (one json parameter)
 *   s   the signatures of the keyed creations that bring one (shared/requestSignaturesSql.ts)
 *   k   their idempotency keys, each taken only if its signature was, now or before with this
 *       very key (shared/idempotencySql.ts)
 *   i   the creations (`from` null): each row inserted, if its key was taken
 *   u   the changes: each row updated only while it still has the status and version it was
 *       read with (compare-and-set), is still unsent when the write says so, and its callback is
 *       not yet processed (shared/providers/callbackOutcome.ts); a refused write leaves the others
 *   m   what was written, creations and changes; `h` its history rows (the kernel's, here)
 *   then, joined to m so that a refused write writes nothing of its own: the outbox rows
 *   (shared/db/sql/outbox.ts), the events `ev`/`e` (shared/events/record.ts), their deliveries `d`
 *   (shared/webhooks/fanout.ts), the credit `lt`/`le` (shared/ledger/credit.ts) and the callback's
 *   outcome `c` (shared/providers/callbackOutcome.ts).
 *
 * A caller holding the row's lock (transition.ts applyTrigger) cannot fail its compare-and-set;
 * one that read without a lock (a callback's or a push's batch) reads again when it does.
 */

/** A kind's statements, built once when the kind is declared (its tables' names are the kernel's constants). */
export function operationSql(k: OperationTables) {
  return {
    ...operationReads(k),
    // the writer's statement, in its four shapes
    create: writeStatement(k, 'create'),
    createKeyed: writeStatement(k, 'create-keyed'),
    change: writeStatement(k, 'change'),
    changeRow: writeStatement(k, 'change-row'),
    // a repeat or a late report
    mark: markCallbacksStatement(k),
  };
}

export type OperationSql = ReturnType<typeof operationSql>;

type WriteShape = 'create' | 'create-keyed' | 'change' | 'change-row';

/**
 * The writer's statement of a kind, in four shapes so that a statement opens no table it does not
 * write: `create` (new rows), `create-keyed` (new rows, each under its idempotency key, written
 * only if the key was taken), `change` (the compare-and-set, with its history, event, deliveries,
 * outbox rows, credit and callback) and `change-row` (the compare-and-set alone: a push's
 * acceptance, columns beside the machine). json parameters, not arrays: one text whatever the
 * batch, planned once per connection (a custom plan would know how many rows there are and always
 * look cheaper than the generic one).
 */
function writeStatement(k: OperationTables, shape: WriteShape): SqlStatement {
  const t = plain(k.table);
  const cols = k.columns.map(plain);
  const h = { table: plain(k.history.table), column: plain(k.history.column) };
  // every column a change may set (a row's columns and updated_at), written from the patch over the row itself
  const changeable = [...cols.filter((c) => c !== 'id'), 'updated_at'];
  const rows =
    shape === 'change' || shape === 'change-row'
      ? // the rows are found by id = any(array(...)), through the primary key: joined on x alone,
        // the generic plan scans the whole table whenever the statistics say few rows match
        `x as materialized (select * from json_to_recordset($1::json)
             as x(id text, from_status text, from_version int, unsent boolean, patch json, to_status text, reason text, callback_id uuid)),
       m as (update ${t} o set (${changeable.join(', ')}) = (select ${changeable.map((c) => `r.${c}`).join(', ')} from json_populate_record(o, x.patch) r)
               from x
              where o.id = any(array(select id from x)) and o.id = x.id
                and o.status = x.from_status and o.version = x.from_version and (o.sent_at is null or x.unsent is not true)
                and ${callbackUnprocessedSql('x.callback_id')}${scopeSql(k, 'o')}
             returning o.id, x.from_status, x.to_status, x.reason, x.callback_id)`
      : `${
          shape === 'create'
            ? 'x as materialized (select * from json_to_recordset($1::json) as x(id text, patch json)),'
            : // each row beside its key (and signature); the key, and so the row, only if its signature lets it
              `x as materialized (select * from json_to_recordset($1::json) as x(id text, patch json, ${KEY_COLUMNS})),
       s as (${takeSignaturesSql(keyedSignaturesSql('x'))}),
       k as (${takeKeysSql(`(select * from x where ${signedWithKeySql('s')}) x`)}),`
        }
       m as (insert into ${t} (${cols.join(', ')})
             select ${cols.map((c) => `r.${c}`).join(', ')}
               from x cross join lateral json_populate_record(null::${t}, x.patch) r
              ${shape === 'create-keyed' ? 'where exists (select 1 from k where k.merchant_id = x.merchant_id and k.environment = x.environment and k.key = x.key)' : ''}
              order by ${k.insertOrder}
             returning id, null::text as from_status, status as to_status, 'created' as reason)`;
  const outbox = `ob as (${outboxInsertSql(`(select x.* from json_to_recordset($2::json)
                 as x(object_id text, ${OUTBOX_COLUMNS}) join m on m.id = x.object_id) o`)})`;
  const history = `h as (insert into ${h.table} (${h.column}, from_status, to_status, reason, at)
             select id, from_status, to_status, reason, clock_timestamp() from m where to_status is not null)`;
  // a change's event with its deliveries, its credit and its callback's outcome (a creation has none)
  const effects =
    shape !== 'change'
      ? ''
      : `,
       ev as (select v.* from json_to_recordset($3::json)
                                as v(${EVENT_COLUMNS})
                join m on m.id = v.object_id),
       e as (${insertEventsSql('ev')}),
       d as (${insertDeliveriesSql('$4', 'ev')}),
       lt as (${credit.insertCreditSql(`json_to_recordset($5::json) as x(object_id text, ${credit.CREDIT_COLUMNS})
               join m on m.id = x.object_id`)}),
       le as (${credit.insertCreditEntriesSql('$6', 'lt')}),
       c as (${callbackAppliedSql('m')})`;
  const writes = shape === 'change-row' ? rows : `${rows},\n       ${history},\n       ${outbox}${effects}`;
  return sqlStatement(`${shape}-${k.name}`, `with ${writes}\n       select id from m`);
}

/** A change of the row alone: no history, event, delivery, job, posting or callback. */
const rowOnly = (w: OperationWrite) =>
  !w.history && !w.event && w.deliveries.length === 0 && w.outbox.length === 0 && !w.posting && !w.callbackId;

/**
 * Splits writes into rounds in which no row and no callback appears twice (an UPDATE ... FROM
 * moves a row once, whatever joins it): a repeated one goes to the next round, which runs after
 * this one and so sees its change.
 */
function rounds(ws: OperationWrite[]): OperationWrite[][] {
  const out: { writes: OperationWrite[]; keys: Set<string> }[] = [];
  for (const w of ws) {
    const keys = [`row:${w.id}`, ...(w.callbackId ? [`cb:${w.callbackId}`] : [])];
    let round = out.find((r) => keys.every((key) => !r.keys.has(key)));
    if (!round) out.push((round = { writes: [], keys: new Set() }));
    round.writes.push(w);
    for (const key of keys) round.keys.add(key);
  }
  return out.map((r) => r.writes);
}

/** A change's row of `x`: the compare-and-set and the history row. */
const changeRecord = (w: OperationWrite) => ({
  id: w.id,
  from_status: w.from!.status,
  from_version: w.from!.version,
  unsent: w.unsent ?? false,
  patch: w.patch,
  to_status: w.history?.to ?? null,
  reason: w.history?.reason ?? null,
  callback_id: w.callbackId ?? null,
});

/** The statement's parameters, in its order, each part's rows built by the part's owner. */
function parameters(shape: WriteShape, batch: OperationWrite[]): unknown[][] {
  if (shape === 'change-row') return [batch.map(changeRecord)];
  const x = shape === 'change' ? batch.map(changeRecord) : batch.map((w) => ({ id: w.id, patch: w.patch, ...w.key }));
  const outbox = batch.flatMap((w) => outboxRecords(w.id, w.outbox));
  if (shape !== 'change') return [x, outbox];
  return [
    x,
    outbox,
    batch.flatMap((w) => (w.event ? [w.event] : [])),
    batch.flatMap((w) => deliveryRecords(w.id, w.deliveries)),
    batch.flatMap((w) => (w.posting ? [credit.creditRecord(w.id, w.environment, w.posting)] : [])),
    batch.flatMap((w) => (w.posting ? credit.creditEntryRecords(w.posting) : [])),
  ];
}

/**
 * Carries out the kernel's decisions: one statement per round (one for a batch without repeats),
 * on the pool (its own transaction) or in the caller's. Returns, for each write in order, whether
 * it was written. A refusal by a constraint (a reference already used, a key twice) fails the
 * whole statement, and nothing of it is written.
 */
export async function writeOperations(db: Executor, k: OperationSql, ws: OperationWrite[]): Promise<boolean[]> {
  const written = new Set<OperationWrite>();
  const creations = ws.filter((w) => w.from === null);
  for (const w of creations)
    if (w.event || w.posting || w.callbackId) throw new Error(`a creation (${w.id}) has no event, posting or callback`);
  const batches: [WriteShape, OperationWrite[]][] = [
    ['create-keyed', creations.filter((w) => w.key)],
    ['create', creations.filter((w) => !w.key)],
    ...rounds(ws.filter((w) => w.from !== null)).map((round): [WriteShape, OperationWrite[]] => [
      round.every(rowOnly) ? 'change-row' : 'change',
      round,
    ]),
  ];
  const statements = { create: k.create, 'create-keyed': k.createKeyed, change: k.change, 'change-row': k.changeRow };
  for (const [shape, batch] of batches) {
    if (batch.length === 0) continue;
    const values = parameters(shape, batch).map((v) => JSON.stringify(v));
    const done = new Set((await runSql<{ id: string }>(db, statements[shape], values)).map((r) => r.id));
    for (const w of batch) if (done.has(w.id)) written.add(w);
  }
  return ws.map((w) => written.has(w));
}
