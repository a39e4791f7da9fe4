import type { OutboxMessage } from '../../queues/outbox';
import type { Executor } from '../knex';
import { runSql, sqlStatement, type SqlStatement } from './run';

/**
 * The statements of a transition written in one round trip (shared/operations/oneStatement.ts):
 * one read of everything a callback's transition needs, and one write of everything it changes.
 * Built once per kind (its table and history table); the kinds are the kernel's own constants.
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
      `update ${k.model.tableName} o set sent_at = x.sent_at, provider_ref = x.provider_ref, version = x.version, updated_at = x.updated_at
         from unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::text[], $6::int[], $7::timestamptz[])
              as x(id, from_status, from_version, sent_at, provider_ref, version, updated_at)
        where o.id = x.id and o.status = x.from_status and o.version = x.from_version and o.sent_at is null${scopeSql(k, 'o')}
        returning o.id`,
    ),
  );
  // an UPDATE … FROM takes one arbitrary source row per target: only the first record of an id is sent
  const firsts = [...new Map(records.map((r) => [r.id, r] as const).reverse()).values()];
  const written = new Set(
    (
      await runSql<{ id: string }>(db, statement, [
        firsts.map((r) => r.id), firsts.map((r) => r.from.status), firsts.map((r) => r.from.version),
        firsts.map((r) => r.set.sent_at), firsts.map((r) => r.set.provider_ref), firsts.map((r) => r.set.version), firsts.map((r) => r.set.updated_at),
      ])
    ).map((r) => r.id),
  );
  return records.map((r) => written.delete(r.id));
}

function readStatement(k: TransitionTables): SqlStatement {
  let s = reads.get(k.name);
  if (!s) {
    s = sqlStatement(
      `read-callback-${k.name}`,
      `select c.provider as cb_provider, c.raw_body as cb_raw_body, c.processed_at as cb_processed_at, o.*,
              (select coalesce(json_agg(json_build_object('id', w.id, 'events', w.events)), '[]'::json)
                 from webhooks w where w.merchant_id = o.merchant_id and w.environment = o.environment and w.status = 'enabled') as cb_endpoints,
              (select coalesce(json_agg(json_build_object('id', a.id, 'owner', a.owner, 'kind', a.kind)), '[]'::json)
                 from ledger_accounts a where a.environment = o.environment and a.currency = o.currency and a.owner in (o.merchant_id, 'platform')) as cb_accounts
         from provider_callbacks c
         join ${k.model.tableName} o on o.id = c.object_id${scopeSql(k, 'o')}
        where c.id = $1 and c.object_kind = $2`,
    );
    reads.set(k.name, s);
  }
  return s;
}

/** The callback, its operation and what the transition needs, in one read; undefined when either is missing. */
export async function readCallbackWithRow<R>(db: Executor, k: TransitionTables, callbackId: string): Promise<CallbackWithRow<R> | undefined> {
  const [r] = await runSql<Record<string, unknown>>(db, readStatement(k), [callbackId, k.name]);
  if (!r) return undefined;
  const { cb_provider, cb_raw_body, cb_processed_at, cb_endpoints, cb_accounts, ...row } = r;
  return {
    callback: { provider: cb_provider as string, raw_body: cb_raw_body as string, processed_at: cb_processed_at as Date | null },
    row: row as R,
    endpoints: cb_endpoints as CallbackWithRow<R>['endpoints'],
    accounts: cb_accounts as CallbackWithRow<R>['accounts'],
  };
}

function writeStatement(k: TransitionTables): SqlStatement {
  let s = writes.get(k.name);
  if (!s) {
    s = sqlStatement(
      `write-transition-${k.name}`,
      `with u as (
         update ${k.model.tableName} set status = $3, version = $4, updated_at = $5, completed = $6, failure_code = $7, failure_message = $8, provider_ref = $9
          where id = $1 and status = $2 and version = $10
            and not exists (select 1 from provider_callbacks where id = $11 and processed_at is not null)
         returning id),
       h as (insert into ${k.history.tableName} (${k.history.column}, from_status, to_status, reason, at) select id, $2, $3, $12, clock_timestamp() from u),
       e as (insert into events (id, merchant_id, environment, type, object_id, object_version, created, body)
             select $13, $14, $15, $16, id, $4, $17, $18::jsonb from u where $13::text is not null),
       d as (insert into webhook_deliveries (id, event_id, webhook_id, created, redelivery)
             select x.id, $13, x.webhook_id, $17, 0 from u, unnest($19::text[], $20::text[]) as x(id, webhook_id)),
       o as (insert into outbox (id, queue, job_name, payload, delay_ms)
             select x.id, x.queue, x.job_name, x.payload::jsonb, x.delay_ms from u, unnest($21::uuid[], $22::text[], $23::text[], $24::text[], $25::int[]) as x(id, queue, job_name, payload, delay_ms)),
       t as (insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id)
             select $26, $27, $32, $15, $28, $33 from u where $26::uuid is not null
             on conflict (kind, reference_id) do nothing returning id),
       l as (insert into ledger_entries (transaction_id, account_id, amount, unfolded)
             select t.id, x.account_id, x.amount, x.unfolded from t, unnest($29::bigint[], $30::bigint[], $31::boolean[]) as x(account_id, amount, unfolded)),
       c as (update provider_callbacks set processed_at = now(), outcome = 'applied' where id = $11 and processed_at is null and exists (select 1 from u))
       select count(*)::int as moved from u`,
    );
    writes.set(k.name, s);
  }
  return s;
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
 * The row's move with its history row, its event with its deliveries and their outbox rows, its
 * ledger transaction with its entries, and the callback's outcome: one statement, written only
 * while the row still has the status and version it was read with and the callback is not yet
 * processed. Returns whether it was written.
 */
export async function writeTransition(db: Executor, k: TransitionTables, w: TransitionWrite): Promise<boolean> {
  const s = w.set;
  const [{ moved }] = await runSql<{ moved: number }>(db, writeStatement(k), [
    w.id, w.from.status, s.status, s.version, s.updated_at, s.completed, s.failure_code, s.failure_message, s.provider_ref, w.from.version,
    w.callbackId, w.reason,
    w.event?.id ?? null, w.merchantId, w.environment, w.event?.type ?? null, w.event?.created ?? null, w.event?.body ?? null,
    w.deliveries.map((d) => d.id), w.deliveries.map((d) => d.webhook_id),
    w.outbox.map((m) => m.id), w.outbox.map((m) => m.queue), w.outbox.map((m) => m.job_name), w.outbox.map((m) => JSON.stringify(m.payload)), w.outbox.map((m) => m.delay_ms),
    w.posting?.id ?? null, w.posting?.kind ?? null, w.posting?.currency ?? null,
    w.posting?.entries.map((e) => e.account_id) ?? [], w.posting?.entries.map((e) => e.amount) ?? [], w.posting?.entries.map((e) => e.unfolded) ?? [],
    w.posting?.referenceId ?? null, w.posting?.merchantId ?? null,
  ]);
  return moved === 1;
}
