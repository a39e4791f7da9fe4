import type { OutboxMessage } from '../rows';
import type { Executor } from '../knex';
import { runSql, sqlStatement, type SqlStatement } from './run';
import { takeKeysSql } from './idempotencyKeys';
import { takeSignaturesSql } from './requestSignatures';
import type { CallbackColumns } from '../rows';

/**
 * The writer of operations (payments, refunds, payouts): the one module that inserts or changes
 * their rows' status, and the one that inserts into the outbox (test/unit/one-writer.test.ts).
 *
 * The kernel decides (shared/operations: the state machine is data, `decide` and
 * `transitionWrite` are pure); this module carries the decision out. One statement writes a
 * batch of them, a batch of one when nothing runs beside it:
 *
 *   x   the writes (one json parameter)
 *   s   the signatures of the keyed creations that bring one (a signed POST /v1/payments:
 *       docs/decisions.md "Replayed signed requests")
 *   k   the idempotency keys of the creations that bring one (a POST /v1/payments), each taken
 *       only if its signature was, now or before with this very key
 *   i   the creations (`from` null): each row inserted, if its key was taken
 *   u   the changes: each row updated only while it still has the status and version it was
 *       read with (compare-and-set), is still unsent when the write says so, and its callback is
 *       not yet processed; a write refused leaves the others of its batch
 *   m   what was written: creations and changes, each with its history row
 *   then, joined to m so that a refused write writes nothing of its own: the events, their
 *   webhook deliveries, the outbox rows, the ledger postings (credits, with their accounts'
 *   ids) and the callbacks' outcomes.
 *
 * A caller that holds the row's lock (the general path: shared/operations/transition.ts) writes
 * through the same statement, and its compare-and-set cannot fail; one that read without a lock
 * (a callback's or a push's batch) reads again when it does. The statements are built once per
 * kind, when the kind is declared (`operationSql`).
 */

export interface OperationTables {
  /** the kind's name (the statements' names) */
  name: string;
  table: string;
  /** when kinds share a table: the column values of this kind's rows (kernel constants) */
  scope?: Record<string, string>;
  /** its history table, and the column naming the row */
  history: { table: string; column: string };
  /** the columns of a row (shared/db/rows.ts) */
  columns: readonly string[];
  /** the order new rows are inserted in: two batches that share a unique value wait for each other instead of deadlocking */
  insertOrder: string;
}

const PLAIN = /^[a-z_][a-z0-9_]*$/;

function plain(name: string): string {
  if (!PLAIN.test(name)) throw new Error(`not a plain name: ${name}`);
  return name;
}

/** The kind's scope as conditions on `alias` (its values are the kernel's constants, quoted as literals). */
function scopeSql(k: OperationTables, alias: string): string {
  return Object.entries(k.scope ?? {})
    .map(([column, value]) => ` and ${alias}.${plain(column)} = '${plain(value)}'`)
    .join('');
}

/** The outbox insert of every statement that writes outbox rows, from `source` (id, queue, job_name, payload, delay_ms, traceparent). */
export const outboxInsertSql = (source: string) =>
  `insert into outbox (id, queue, job_name, payload, delay_ms, traceparent) select id, queue, job_name, payload, delay_ms, traceparent from ${source}`;

const OUTBOX_ROWS = `json_to_recordset($1::json) as x(id uuid, queue text, job_name text, payload jsonb, delay_ms int, traceparent text)`;
const INSERT_OUTBOX = sqlStatement('outbox-insert', outboxInsertSql(OUTBOX_ROWS));

/** Outbox rows on their own (shared/queues/outbox.ts: a flow's jobs written in its transaction). */
export async function insertOutbox(db: Executor, msgs: OutboxMessage[]): Promise<void> {
  await runSql(db, INSERT_OUTBOX, [JSON.stringify(msgs)]);
}

/** A kind's statements, built once when the kind is declared (its tables' names are the kernel's constants). */
export type OperationSql = ReturnType<typeof operationSql>;

/**
 * An open row of `o` past its window and due an ask: never asked, or asked longer ago than the
 * wait its asks have earned ($1 open statuses, $2 now, $3 the longest wait between asks, $4 the
 * first wait, in ms; the wait doubles with each ask).
 */
function dueSql(k: OperationTables): string {
  return `o.status = any($1::text[]) and o.window_ends_at < $2${scopeSql(k, 'o')}
          and (o.asked_at is null or o.asked_at < $2::timestamptz - least($3, $4 * power(2, least(o.asks - 1, 20))) * interval '1 millisecond')`;
}

export function operationSql(k: OperationTables) {
  const t = plain(k.table);
  return {
    tables: k,
    find: sqlStatement(`find-${k.name}`, `select * from ${t} o where o.id = $1${scopeSql(k, 'o')}`),
    // the ids go through array(select unnest(...)): a custom plan would know how many there are
    // and always look cheaper than the generic one, so Postgres would plan the read at every call
    findMany: sqlStatement(
      `find-many-${k.name}`,
      `select * from ${t} o where o.id = any(array(select unnest($1::text[])))${scopeSql(k, 'o')}`,
    ),
    readCallbacks: sqlStatement(
      `read-callbacks-${k.name}`,
      `select c.id as cb_id, c.processed_at as cb_processed_at, to_jsonb(c) - 'raw_body' as cb_fields, o.*,
              (select coalesce(json_agg(json_build_object('id', w.id, 'events', w.events)), '[]'::json)
                 from webhooks w where w.merchant_id = o.merchant_id and w.environment = o.environment and w.status = 'enabled') as cb_endpoints,
              (select coalesce(json_agg(json_build_object('id', a.id, 'owner', a.owner, 'kind', a.kind)), '[]'::json)
                 from ledger_accounts a where a.environment = o.environment and a.currency = o.currency and a.owner in (o.merchant_id, 'platform')) as cb_accounts
         from provider_callbacks c
         join ${t} o on o.id = c.object_id${scopeSql(k, 'o')}
        where c.id = any(array(select unnest($1::uuid[]))) and c.object_kind = $2`,
    ),
    // the sweep's (shared/operations/sweep.ts): open rows past their window that are due an ask. Its probe first (nearly
    // always none: one read without a transaction says so), then its claim in the caller's transaction: the first $5 by
    // window, locked, passing over rows another sweep holds
    due: sqlStatement(`due-${k.name}`, `select 1 from ${t} o where ${dueSql(k)} limit 1`),
    claimDue: sqlStatement(
      `claim-due-${k.name}`,
      `select o.id, o.merchant_id, o.environment, o.status, o.version, o.asked_at, o.asks from ${t} o
        where ${dueSql(k)} order by o.window_ends_at limit $5 for update skip locked`,
    ),
    // the re-drive's (shared/operations/send.ts unsentOperations): open rows never sent, created before $2 ($1 open statuses),
    // whose window ends after $3 (-infinity: any), oldest first, at most $4
    unsent: sqlStatement(
      `unsent-${k.name}`,
      `select * from ${t} o
        where o.status = any($1::text[]) and o.sent_at is null and o.created_at < $2 and o.window_ends_at > $3${scopeSql(k, 'o')}
        order by o.created_at limit $4`,
    ),
    // the writer's statement, in its four shapes (writeStatement)
    create: writeStatement(k, 'create'),
    createKeyed: writeStatement(k, 'create-keyed'),
    change: writeStatement(k, 'change'),
    changeRow: writeStatement(k, 'change-row'),
    // a repeat or a late report: see markCallbacks
    mark: sqlStatement(
      `mark-callbacks-${k.name}`,
      `with x as materialized (
         select * from jsonb_to_recordset($1::jsonb) as x(callback_id uuid, outcome text, id text, from_status text, from_version int))
       update provider_callbacks pc set processed_at = now(), outcome = x.outcome
         from x
        where pc.id = any(array(select callback_id from x)) and pc.id = x.callback_id and pc.processed_at is null
          and exists (select 1 from ${t} o
                       where o.id = x.id and o.status = x.from_status and o.version = x.from_version${scopeSql(k, 'o')})
        returning pc.id`,
    ),
  };
}

type WriteShape = 'create' | 'create-keyed' | 'change' | 'change-row';

/**
 * The writer's statement of a kind. One text, built here, in four shapes, so that a statement
 * opens no table it does not write: `create` (new rows), `create-keyed` (new rows, each under its
 * idempotency key, written only if the key was taken), `change` (the compare-and-set, with its
 * history, event, deliveries, outbox rows, credit and callback) and `change-row` (the
 * compare-and-set alone: a push's acceptance, columns beside the machine). json parameters, not
 * arrays: one text whatever the batch, planned once per connection (a custom plan would know how
 * many rows there are and always look cheaper than the generic one).
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
                and not exists (select 1 from provider_callbacks pc where pc.id = x.callback_id and pc.processed_at is not null)${scopeSql(k, 'o')}
             returning o.id, x.from_status, x.to_status, x.reason, x.callback_id)`
      : `${
          shape === 'create'
            ? 'x as materialized (select * from json_to_recordset($1::json) as x(id text, patch json)),'
            : // the keys' columns beside each row, as takeKeysSql reads them
              // a signed request's signature first: its key, and so its row, only if the signature was
              // taken now or before with this very key (the same request again: the key's rules answer it)
              `x as materialized (select * from json_to_recordset($1::json) as x(id text, patch json, merchant_id text, environment text, key uuid, method text,
             path text, request_hash text, status text, response_status int, response_headers text, response_body text, window_ms bigint, now_ms bigint,
             signature text, signature_expires bigint)),
       s as (${takeSignaturesSql('(select merchant_id, environment, signature, key::text as key, signature_expires as expires from x where signature is not null) x')}),
       k as (${takeKeysSql(`(select * from x where signature is null
                             or exists (select 1 from s where s.merchant_id = x.merchant_id and s.environment = x.environment and s.signature = x.signature
                                                  and s.idempotency_key = x.key::text)
                             or exists (select 1 from request_signatures r where r.merchant_id = x.merchant_id and r.environment = x.environment
                                                  and r.signature = x.signature and r.idempotency_key = x.key::text)) x`)}),`
        }
       m as (insert into ${t} (${cols.join(', ')})
             select ${cols.map((c) => `r.${c}`).join(', ')}
               from x cross join lateral json_populate_record(null::${t}, x.patch) r
              ${shape === 'create-keyed' ? 'where exists (select 1 from k where k.merchant_id = x.merchant_id and k.environment = x.environment and k.key = x.key)' : ''}
              order by ${k.insertOrder}
             returning id, null::text as from_status, status as to_status, 'created' as reason)`;
  const outbox = `ob as (${outboxInsertSql(`(select x.* from json_to_recordset($2::json)
                 as x(object_id text, id uuid, queue text, job_name text, payload jsonb, delay_ms int, traceparent text) join m on m.id = x.object_id) o`)})`;
  const history = `h as (insert into ${h.table} (${h.column}, from_status, to_status, reason, at)
             select id, from_status, to_status, reason, clock_timestamp() from m where to_status is not null)`;
  // a change's event with its deliveries, its credit and its callback's outcome (a creation has none)
  const effects =
    shape !== 'change'
      ? ''
      : `,
       ev as (select v.* from json_to_recordset($3::json)
                                as v(object_id text, id text, merchant_id text, environment text, type text, object_version int, created bigint, body text)
                join m on m.id = v.object_id),
       e as (insert into events (id, merchant_id, environment, type, object_id, object_version, created, body)
             select id, merchant_id, environment, type, object_id, object_version, created, body::jsonb from ev),
       d as (insert into webhook_deliveries (id, event_id, webhook_id, created, redelivery)
             select x.id, ev.id, x.webhook_id, ev.created, 0 from json_to_recordset($4::json) as x(object_id text, id text, webhook_id text) join ev on ev.object_id = x.object_id),
       lt as (insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id)
             select x.id, x.kind, x.reference_id, x.environment, x.currency, x.merchant_id
               from json_to_recordset($5::json) as x(object_id text, id uuid, kind text, reference_id text, environment text, currency text, merchant_id text)
               join m on m.id = x.object_id
             on conflict (kind, reference_id) do nothing returning id),
       le as (insert into ledger_entries (transaction_id, account_id, amount, unfolded)
             select lt.id, x.account_id, x.amount, x.unfolded
               from json_to_recordset($6::json) as x(transaction_id uuid, account_id bigint, amount bigint, unfolded boolean)
               join lt on lt.id = x.transaction_id),
       c as (update provider_callbacks pc set processed_at = now(), outcome = 'applied' from m where pc.id = m.callback_id and pc.processed_at is null)`;
  const writes =
    shape === 'change-row'
      ? rows
      : `${rows},
       ${history},
       ${outbox}${effects}`;
  return sqlStatement(
    `${shape}-${k.name}`,
    `with ${writes}
       select id from m`,
  );
}

/** An operation's row by id (no lock). */
export async function findOperation<R>(db: Executor, k: OperationSql, id: string): Promise<R | undefined> {
  const [row] = await runSql<R>(db, k.find, [id]);
  return row;
}

/** Operations' rows by id (no lock), one statement for many, in the order of `ids` (undefined: not found). */
export async function findOperations<R extends { id: string }>(
  db: Executor,
  k: OperationSql,
  ids: string[],
): Promise<(R | undefined)[]> {
  const found = new Map((await runSql<R>(db, k.findMany, [ids])).map((r) => [r.id, r] as const));
  return ids.map((id) => found.get(id));
}

/** A stored callback with its operation's row and what its transition needs to know. */
export interface CallbackWithRow<R> {
  callback: CallbackColumns & { processed_at: Date | null };
  /** the operation, read without a lock (the write is a compare-and-set on its version) */
  row: R;
  /** the enabled endpoints of the operation's merchant and environment */
  endpoints: { id: string; events: string[] }[];
  /** the ledger accounts of the merchant and the platform in the operation's environment and currency */
  accounts: { id: number; owner: string; kind: string }[];
}

/**
 * Callbacks with their operations and what their transitions need, in one read, by callback id;
 * a callback that is missing, of another kind or whose operation is missing is not in the map.
 */
export async function readCallbacksWithRows<R>(
  db: Executor,
  k: OperationSql,
  callbackIds: string[],
): Promise<Map<string, CallbackWithRow<R>>> {
  const found = await runSql<Record<string, unknown>>(db, k.readCallbacks, [callbackIds, k.tables.name]);
  const byId = new Map<string, CallbackWithRow<R>>();
  for (const { cb_id, cb_processed_at, cb_fields, cb_endpoints, cb_accounts, ...row } of found) {
    byId.set(cb_id as string, {
      callback: { ...(cb_fields as CallbackColumns), processed_at: cb_processed_at as Date | null },
      row: row as R,
      endpoints: cb_endpoints as CallbackWithRow<R>['endpoints'],
      accounts: cb_accounts as CallbackWithRow<R>['accounts'],
    });
  }
  return byId;
}

/** A credit posting with its accounts' ids (a posting that takes from a guarded account locks it: shared/ledger/postings.ts). */
export interface CreditPosting {
  id: string;
  kind: string;
  referenceId: string;
  merchantId: string | null;
  currency: string;
  entries: { account_id: number; amount: number; unfolded: boolean }[];
}

/** The idempotency key a creation is written under (shared/idempotency.ts `takeKeyValues`, by name). */
export interface KeyRow {
  merchant_id: string;
  environment: string;
  key: string;
  method: string;
  path: string;
  request_hash: string;
  status: string;
  response_status: number | null;
  response_headers: string | null;
  /** base64 */
  response_body: string | null;
  window_ms: number;
  /** the service clock at the request, Unix ms: the key's window starts here */
  now_ms: number;
  /** the signed request's signature, taken with the key (null: the request leaves it to the replay guard) */
  signature: string | null;
  /** when its record may go: the request's X-Timestamp plus the tolerance, Unix seconds */
  signature_expires: number | null;
}

/** One decision of the kernel, as the writer carries it out. */
export interface OperationWrite {
  id: string;
  /** the status and version the row was read with (the compare-and-set); null: the row is created */
  from: { status: string; version: number } | null;
  /** written only while the row is still unsent (the provider's acceptance) */
  unsent?: boolean;
  /** a creation: the whole row; a change: the columns it sets */
  patch: Record<string, unknown>;
  /** the status history row of a move (a creation's is `created`); null: a stay */
  history: { to: string; reason: string } | null;
  /** the callback whose report this is: the write happens only while it is unprocessed, and marks it applied */
  callbackId?: string | null;
  /** a creation under an idempotency key: written only if the key was taken */
  key?: KeyRow | null;
  /** the row's merchant and environment (its event's and its posting's) */
  merchantId: string;
  environment: string;
  event: { id: string; type: string; created: number; body: string } | null;
  deliveries: { id: string; webhook_id: string }[];
  outbox: OutboxMessage[];
  posting: CreditPosting | null;
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
  const batches: [SqlStatement, OperationWrite[]][] = [
    [k.createKeyed, creations.filter((w) => w.key)],
    [k.create, creations.filter((w) => !w.key)],
    ...rounds(ws.filter((w) => w.from !== null)).map((round): [SqlStatement, OperationWrite[]] => [
      round.every(rowOnly) ? k.changeRow : k.change,
      round,
    ]),
  ];
  for (const [statement, batch] of batches) {
    if (batch.length === 0) continue;
    const change = statement === k.change;
    const changeRow = statement === k.changeRow;
    const rows = batch.map((w) =>
      change || changeRow
        ? {
            id: w.id,
            from_status: w.from!.status,
            from_version: w.from!.version,
            unsent: w.unsent ?? false,
            patch: w.patch,
            to_status: w.history?.to ?? null,
            reason: w.history?.reason ?? null,
            callback_id: w.callbackId ?? null,
          }
        : { id: w.id, patch: w.patch, ...w.key },
    );
    const outbox = batch.flatMap((w) => w.outbox.map((m) => ({ object_id: w.id, ...m })));
    const effects = change
      ? [
          batch
            .filter((w) => w.event)
            .map((w) => ({
              object_id: w.id,
              merchant_id: w.merchantId,
              environment: w.environment,
              object_version: w.patch.version,
              ...w.event,
            })),
          batch.flatMap((w) => w.deliveries.map((d) => ({ object_id: w.id, ...d }))),
          batch
            .filter((w) => w.posting)
            .map((w) => ({
              object_id: w.id,
              id: w.posting!.id,
              kind: w.posting!.kind,
              reference_id: w.posting!.referenceId,
              environment: w.environment,
              currency: w.posting!.currency,
              merchant_id: w.posting!.merchantId,
            })),
          batch.flatMap((w) =>
            w.posting ? w.posting.entries.map((e) => ({ transaction_id: w.posting!.id, ...e })) : [],
          ),
        ]
      : [];
    const ids = await runSql<{ id: string }>(
      db,
      statement,
      (changeRow ? [rows] : [rows, outbox, ...effects]).map((v) => JSON.stringify(v)),
    );
    const done = new Set(ids.map((r) => r.id));
    for (const w of batch) if (done.has(w.id)) written.add(w);
  }
  return ws.map((w) => written.has(w));
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
export async function markCallbacks(db: Executor, k: OperationSql, ms: CallbackMark[]): Promise<boolean[]> {
  const rows = ms.map((m) => ({
    callback_id: m.callbackId,
    outcome: m.outcome,
    id: m.id,
    from_status: m.from.status,
    from_version: m.from.version,
  }));
  const marked = new Set((await runSql<{ id: string }>(db, k.mark, [JSON.stringify(rows)])).map((r) => r.id));
  // a callback given twice counts once, for its first
  return ms.map((m) => marked.delete(m.callbackId));
}
