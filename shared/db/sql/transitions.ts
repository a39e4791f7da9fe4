import type { OutboxMessage } from '../../queues/outbox';
import type { Executor } from '../knex';
import { runSql, sqlStatement, type SqlStatement } from './run';

/**
 * The statements of a transition written in one round trip (shared/operations/oneStatement.ts):
 * one read of everything a batch of callbacks' transitions need, and one write of everything they
 * change (a batch of one when nothing runs beside it). Built once per kind (its table and history
 * table); the kinds are the kernel's own constants.
 */

export interface TransitionTables {
  name: string;
  /** the kind's table, as its model names it */
  model: { tableName: string };
  /** when kinds share a table: the column values of this kind's rows (kernel constants) */
  scope?: Record<string, string>;
  /** its history table, as its model names it, and the column naming the row */
  history: { tableName: string; column: string };
}

/** The kind's scope as conditions on `alias` (its values are the kernel's constants, quoted as literals). */
function scopeSql(k: TransitionTables, alias: string): string {
  return Object.entries(k.scope ?? {})
    .map(([column, value]) => {
      if (!/^[a-z_]+$/.test(column) || !/^[a-z_]+$/.test(value)) throw new Error(`kind ${k.name}: scope ${column}=${value} is not a plain name`);
      return ` and ${alias}.${column} = '${value}'`;
    })
    .join('');
}

/** A stored callback with its operation's row and what its transition needs to know. */
export interface CallbackWithRow<R> {
  callback: { provider: string; raw_body: string; processed_at: Date | null };
  /** the operation, read without a lock (the write is a compare-and-set on its version) */
  row: R;
  /** the enabled endpoints of the operation's merchant and environment */
  endpoints: { id: string; events: string[] }[];
  /** the ledger accounts of the merchant and the platform in the operation's environment and currency */
  accounts: { id: number; owner: string; kind: string }[];
}

const reads = new Map<string, SqlStatement>();
const writes = new Map<string, SqlStatement>();
const rows = new Map<string, SqlStatement>();
const sents = new Map<string, SqlStatement>();
const manyRows = new Map<string, SqlStatement>();
const marks = new Map<string, SqlStatement>();

/** For each key in order, whether the statement returned it (a key given twice counts once, for its first). */
function returnedInOrder(keys: string[], returned: { id: string }[]): boolean[] {
  const ids = new Set(returned.map((r) => r.id));
  return keys.map((k) => ids.delete(k));
}

/** One statement per kind, declared on first use. */
function perKind(cache: Map<string, SqlStatement>, k: TransitionTables, make: () => SqlStatement): SqlStatement {
  let s = cache.get(k.name);
  if (!s) cache.set(k.name, (s = make()));
  return s;
}

/** An operation's row by id (no lock). */
export async function findOperation<R>(db: Executor, k: TransitionTables, id: string): Promise<R | undefined> {
  const [row] = await runSql<R>(db, perKind(rows, k, () => sqlStatement(`find-${k.name}`, `select * from ${k.model.tableName} o where o.id = $1${scopeSql(k, 'o')}`)), [id]);
  return row;
}

/** Operations' rows by id (no lock), one statement for many, in the order of `ids` (undefined: not found). */
export async function findOperations<R extends { id: string }>(db: Executor, k: TransitionTables, ids: string[]): Promise<(R | undefined)[]> {
  const statement = perKind(manyRows, k, () =>
    // the ids go through array(select unnest(...)): see readStatement
    sqlStatement(`find-many-${k.name}`, `select * from ${k.model.tableName} o where o.id = any(array(select unnest($1::text[])))${scopeSql(k, 'o')}`),
  );
  const found = new Map((await runSql<R>(db, statement, [ids])).map((r) => [r.id, r] as const));
  return ids.map((id) => found.get(id));
}

export interface SentRecord {
  id: string;
  /** the status and version the row was read with: the write happens only if they are still its own, and it is unsent */
  from: { status: string; version: number };
  set: { sent_at: Date; provider_ref: string | null; version: number; updated_at: Date };
}

/**
 * The provider's acceptance of operations that stay in their status (a payment's push), one
 * statement for many: each row a compare-and-set on the status and version it was read with,
 * still unsent. Returns, in order, whether each was written; an id given twice is written at
 * most once, for its first record.
 */
export async function recordSent(db: Executor, k: TransitionTables, records: SentRecord[]): Promise<boolean[]> {
  const statement = perKind(sents, k, () =>
    sqlStatement(
      `record-sent-${k.name}`,
      `with x as materialized (
         select * from jsonb_to_recordset($1::jsonb)
             as x(id text, from_status text, from_version int, sent_at timestamptz, provider_ref text, version int, updated_at timestamptz))
       update ${k.model.tableName} o set sent_at = x.sent_at, provider_ref = x.provider_ref, version = x.version, updated_at = x.updated_at
         from x
        where o.id = any(array(select id from x)) and o.id = x.id and o.status = x.from_status and o.version = x.from_version and o.sent_at is null${scopeSql(k, 'o')}
        returning o.id`,
    ),
  );
  // an UPDATE … FROM takes one arbitrary source row per target: only the first record of an id is sent
  const firsts = [...new Map(records.map((r) => [r.id, r] as const).reverse()).values()];
  // one jsonb parameter, not arrays: a custom plan would know how many rows unnest gives and
  // always look cheaper than the generic one, so Postgres would plan this update at every call.
  // The rows are found by id = any(array(...)), through the primary key: joined on x alone, the
  // generic plan scans the whole table whenever the statistics say few rows are unsent
  const returned = await runSql<{ id: string }>(db, statement, [
    JSON.stringify(firsts.map((r) => ({ id: r.id, from_status: r.from.status, from_version: r.from.version, ...r.set }))),
  ]);
  return returnedInOrder(records.map((r) => r.id), returned);
}

// the ids go through array(select unnest(...)): a custom plan would know how many there are and
// always look cheaper than the generic one, so Postgres would plan the read at every call
function readStatement(k: TransitionTables): SqlStatement {
  return perKind(reads, k, () =>
    sqlStatement(
      `read-callbacks-${k.name}`,
      `select c.id as cb_id, c.provider as cb_provider, c.raw_body as cb_raw_body, c.processed_at as cb_processed_at, o.*,
              (select coalesce(json_agg(json_build_object('id', w.id, 'events', w.events)), '[]'::json)
                 from webhooks w where w.merchant_id = o.merchant_id and w.environment = o.environment and w.status = 'enabled') as cb_endpoints,
              (select coalesce(json_agg(json_build_object('id', a.id, 'owner', a.owner, 'kind', a.kind)), '[]'::json)
                 from ledger_accounts a where a.environment = o.environment and a.currency = o.currency and a.owner in (o.merchant_id, 'platform')) as cb_accounts
         from provider_callbacks c
         join ${k.model.tableName} o on o.id = c.object_id${scopeSql(k, 'o')}
        where c.id = any(array(select unnest($1::uuid[]))) and c.object_kind = $2`,
    ),
  );
}

/**
 * Callbacks with their operations and what their transitions need, in one read, by callback id;
 * a callback that is missing, of another kind or whose operation is missing is not in the map.
 */
export async function readCallbacksWithRows<R>(db: Executor, k: TransitionTables, callbackIds: string[]): Promise<Map<string, CallbackWithRow<R>>> {
  const found = await runSql<Record<string, unknown>>(db, readStatement(k), [callbackIds, k.name]);
  const byId = new Map<string, CallbackWithRow<R>>();
  for (const { cb_id, cb_provider, cb_raw_body, cb_processed_at, cb_endpoints, cb_accounts, ...row } of found) {
    byId.set(cb_id as string, {
      callback: { provider: cb_provider as string, raw_body: cb_raw_body as string, processed_at: cb_processed_at as Date | null },
      row: row as R,
      endpoints: cb_endpoints as CallbackWithRow<R>['endpoints'],
      accounts: cb_accounts as CallbackWithRow<R>['accounts'],
    });
  }
  return byId;
}

/**
 * The batch's rows go in as columns (arrays, unnest); its nested lists (deliveries, outbox rows,
 * postings, ledger entries) as flattened columns carrying their parent's id, each list joined to
 * the rows that moved (`u`), so a row whose compare-and-set fails writes nothing of its own.
 */
function writeStatement(k: TransitionTables): SqlStatement {
  return perKind(writes, k, () =>
    sqlStatement(
      `write-transitions-${k.name}`,
      `with u as (
         update ${k.model.tableName} o
            set status = x.status, version = x.version, updated_at = x.updated_at, completed = x.completed,
                failure_code = x.failure_code, failure_message = x.failure_message, provider_ref = x.provider_ref
           from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[], $6::timestamptz[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::uuid[], $12::text[])
                  as x(id, from_status, from_version, status, version, updated_at, completed, failure_code, failure_message, provider_ref, callback_id, reason)
          where o.id = x.id and o.status = x.from_status and o.version = x.from_version
            and not exists (select 1 from provider_callbacks pc where pc.id = x.callback_id and pc.processed_at is not null)
         returning o.id, x.from_status, x.status, x.reason, x.callback_id),
       h as (insert into ${k.history.tableName} (${k.history.column}, from_status, to_status, reason, at) select id, from_status, status, reason, clock_timestamp() from u),
       ev as (select v.* from unnest($13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::int[], $19::bigint[], $20::text[])
                                as v(object_id, id, merchant_id, environment, type, object_version, created, body)
                join u on u.id = v.object_id),
       e as (insert into events (id, merchant_id, environment, type, object_id, object_version, created, body)
             select id, merchant_id, environment, type, object_id, object_version, created, body::jsonb from ev),
       d as (insert into webhook_deliveries (id, event_id, webhook_id, created, redelivery)
             select x.id, ev.id, x.webhook_id, ev.created, 0 from unnest($21::text[], $22::text[], $23::text[]) as x(object_id, id, webhook_id) join ev on ev.object_id = x.object_id),
       ob as (insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
             select x.id, x.queue, x.job_name, x.payload::jsonb, x.delay_ms, x.traceparent
               from unnest($24::text[], $25::uuid[], $26::text[], $27::text[], $28::text[], $29::int[], $30::text[]) as x(object_id, id, queue, job_name, payload, delay_ms, traceparent)
               join u on u.id = x.object_id),
       t as (insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id)
             select x.id, x.kind, x.reference_id, x.environment, x.currency, x.merchant_id
               from unnest($31::text[], $32::uuid[], $33::text[], $34::text[], $35::text[], $36::text[], $37::text[]) as x(object_id, id, kind, reference_id, environment, currency, merchant_id)
               join u on u.id = x.object_id
             on conflict (kind, reference_id) do nothing returning id),
       l as (insert into ledger_entries (transaction_id, account_id, amount, unfolded)
             select t.id, x.account_id, x.amount, x.unfolded
               from unnest($38::uuid[], $39::bigint[], $40::bigint[], $41::boolean[]) as x(transaction_id, account_id, amount, unfolded)
               join t on t.id = x.transaction_id),
       c as (update provider_callbacks pc set processed_at = now(), outcome = 'applied' from u where pc.id = u.callback_id and pc.processed_at is null)
       select id from u`,
    ),
  );
}

export interface TransitionWrite {
  id: string;
  /** the status and version the row was read with: the write happens only if they are still its own */
  from: { status: string; version: number };
  set: { status: string; version: number; updated_at: Date; completed: number | null; failure_code: string | null; failure_message: string | null; provider_ref: string | null };
  reason: string;
  callbackId: string;
  /** the row's merchant and environment (its event's and its posting's) */
  merchantId: string;
  environment: string;
  event: { id: string; type: string; created: number; body: string } | null;
  deliveries: { id: string; webhook_id: string }[];
  outbox: OutboxMessage[];
  posting: { id: string; kind: string; referenceId: string; merchantId: string | null; currency: string; entries: { account_id: number; amount: number; unfolded: boolean }[] } | null;
}

/**
 * Splits writes into rounds in which no row and no callback appears twice (an UPDATE ... FROM
 * moves a row once, whatever joins it): a repeated one goes to the next round, which runs after
 * this one has committed and so sees its move.
 */
function rounds(ws: TransitionWrite[]): TransitionWrite[][] {
  const out: { writes: TransitionWrite[]; keys: Set<string> }[] = [];
  for (const w of ws) {
    let round = out.find((r) => !r.keys.has(`row:${w.id}`) && !r.keys.has(`cb:${w.callbackId}`));
    if (!round) out.push((round = { writes: [], keys: new Set() }));
    round.writes.push(w);
    round.keys.add(`row:${w.id}`).add(`cb:${w.callbackId}`);
  }
  return out.map((r) => r.writes);
}

/**
 * Each row's move with its history row, its event with its deliveries and their outbox rows, its
 * ledger transaction with its entries, and its callback's outcome: one statement per round (one
 * for a batch without repeats), each row written only while it still has the status and version
 * it was read with and its callback is not yet processed; the others commit without it. Returns,
 * for each write in order, whether it was written.
 */
export async function writeTransitions(db: Executor, k: TransitionTables, ws: TransitionWrite[]): Promise<boolean[]> {
  const moved = new Set<TransitionWrite>();
  for (const round of rounds(ws)) {
    const events = round.filter((w) => w.event);
    const deliveries = round.flatMap((w) => w.deliveries.map((d) => ({ objectId: w.id, ...d })));
    const outbox = round.flatMap((w) => w.outbox.map((m) => ({ objectId: w.id, ...m })));
    const postings = round.filter((w) => w.posting);
    const entries = postings.flatMap((w) => w.posting!.entries.map((e) => ({ transactionId: w.posting!.id, ...e })));
    const ids = await runSql<{ id: string }>(db, writeStatement(k), [
      round.map((w) => w.id), round.map((w) => w.from.status), round.map((w) => w.from.version),
      round.map((w) => w.set.status), round.map((w) => w.set.version), round.map((w) => w.set.updated_at), round.map((w) => w.set.completed),
      round.map((w) => w.set.failure_code), round.map((w) => w.set.failure_message), round.map((w) => w.set.provider_ref),
      round.map((w) => w.callbackId), round.map((w) => w.reason),
      events.map((w) => w.id), events.map((w) => w.event!.id), events.map((w) => w.merchantId), events.map((w) => w.environment),
      events.map((w) => w.event!.type), events.map((w) => w.set.version), events.map((w) => w.event!.created), events.map((w) => w.event!.body),
      deliveries.map((d) => d.objectId), deliveries.map((d) => d.id), deliveries.map((d) => d.webhook_id),
      outbox.map((m) => m.objectId), outbox.map((m) => m.id), outbox.map((m) => m.queue), outbox.map((m) => m.job_name), outbox.map((m) => JSON.stringify(m.payload)), outbox.map((m) => m.delay_ms), outbox.map((m) => m.traceparent),
      postings.map((w) => w.id), postings.map((w) => w.posting!.id), postings.map((w) => w.posting!.kind), postings.map((w) => w.posting!.referenceId),
      postings.map((w) => w.environment), postings.map((w) => w.posting!.currency), postings.map((w) => w.posting!.merchantId),
      entries.map((e) => e.transactionId), entries.map((e) => e.account_id), entries.map((e) => e.amount), entries.map((e) => e.unfolded),
    ]);
    const done = new Set(ids.map((r) => r.id));
    for (const w of round) if (done.has(w.id)) moved.add(w);
  }
  return ws.map((w) => moved.has(w));
}

/** A callback that changes nothing (a repeat, a late report): its outcome, and the row state that decided it. */
export interface CallbackMark {
  callbackId: string;
  outcome: 'duplicate' | 'ignored-late';
  /** the operation and the status and version it was read with: the mark is written only if they are still its own */
  id: string;
  from: { status: string; version: number };
}

/**
 * The outcomes of callbacks that change nothing, one statement for many: each callback is marked
 * processed only while it is unprocessed and its operation still has, in the statement's
 * snapshot, the status and version its outcome was decided on (the mark orders before any move
 * committed after it; a repeat or a late report stays one whatever comes next, so no row lock is
 * taken). Returns, in order, whether each was marked.
 */
export async function markCallbacks(db: Executor, k: TransitionTables, ms: CallbackMark[]): Promise<boolean[]> {
  const statement = perKind(marks, k, () =>
    sqlStatement(
      `mark-callbacks-${k.name}`,
      `with x as materialized (
         select * from jsonb_to_recordset($1::jsonb) as x(callback_id uuid, outcome text, id text, from_status text, from_version int))
       update provider_callbacks pc set processed_at = now(), outcome = x.outcome
         from x
        where pc.id = any(array(select callback_id from x)) and pc.id = x.callback_id and pc.processed_at is null
          and exists (select 1 from ${k.model.tableName} o
                       where o.id = x.id and o.status = x.from_status and o.version = x.from_version${scopeSql(k, 'o')})
        returning pc.id`,
    ),
  );
  const rows = ms.map((m) => ({ callback_id: m.callbackId, outcome: m.outcome, id: m.id, from_status: m.from.status, from_version: m.from.version }));
  return returnedInOrder(ms.map((m) => m.callbackId), await runSql<{ id: string }>(db, statement, [JSON.stringify(rows)]));
}
