import type { Executor } from '../knex';
import type { CallbackColumns } from '../rows';
import { runSql, sqlStatement } from './run';
import { plain, scopeSql, type OperationTables } from './operationTables';

/**
 * An operation kind's read statements, built once with the kind (shared/operations/writer.ts
 * `operationSql`): its rows by id, a callback's batch read, the sweep's and the re-drive's.
 */

/**
 * An open row of `o` past its window, or in one of the statuses asked early ($5) and within $6 ms
 * of its window's end, and due an ask: never asked, or asked longer ago than the wait its asks
 * have earned ($1 open statuses, $2 now, $3 the longest wait between asks, $4 the first wait, in
 * ms; the wait doubles with each ask).
 */
function dueSql(k: OperationTables): string {
  return `o.status = any($1::text[])${scopeSql(k, 'o')}
          and (o.window_ends_at < $2
               or (o.status = any($5::text[]) and o.window_ends_at < $2::timestamptz + $6 * interval '1 millisecond'))
          and (o.asked_at is null or o.asked_at < $2::timestamptz - least($3, $4 * power(2, least(o.asks - 1, 20))) * interval '1 millisecond')`;
}

export function operationReads(k: OperationTables) {
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
                 from ledger_accounts a where a.environment = o.environment and a.currency = o.currency and a.owner in (o.merchant_id, 'platform', 'provider:' || o.provider)) as cb_accounts
         from provider_callbacks c
         join ${t} o on o.id = c.object_id${scopeSql(k, 'o')}
        where c.id = any(array(select unnest($1::uuid[]))) and c.object_kind = $2`,
    ),
    // the sweep's (shared/operations/sweep.ts): open rows past their window (or asked early) that are due an ask. Its probe
    // first (nearly always none: one read without a transaction says so), then its claim in the caller's transaction: the first $7 by
    // window, locked, passing over rows another sweep holds
    due: sqlStatement(`due-${k.name}`, `select 1 from ${t} o where ${dueSql(k)} limit 1`),
    claimDue: sqlStatement(
      `claim-due-${k.name}`,
      `select o.id, o.merchant_id, o.environment, o.status, o.version, o.asked_at, o.asks from ${t} o
        where ${dueSql(k)} order by o.window_ends_at limit $7 for update skip locked`,
    ),
    // the re-drive's (shared/operations/send.ts unsentOperations): open rows never sent, created before $2 ($1 open statuses),
    // whose window ends after $3 (-infinity: any), oldest first, at most $4
    unsent: sqlStatement(
      `unsent-${k.name}`,
      `select * from ${t} o
        where o.status = any($1::text[]) and o.sent_at is null and o.created_at < $2 and o.window_ends_at > $3${scopeSql(k, 'o')}
        order by o.created_at limit $4`,
    ),
  };
}

/** A kind's read statements. */
export type OperationReads = ReturnType<typeof operationReads>;

/** An operation's row by id (no lock). */
export async function findOperation<R>(
  db: Executor,
  k: Pick<OperationReads, 'find'>,
  id: string,
): Promise<R | undefined> {
  const [row] = await runSql<R>(db, k.find, [id]);
  return row;
}

/** Operations' rows by id (no lock), one statement for many, in the order of `ids` (undefined: not found). */
export async function findOperations<R extends { id: string }>(
  db: Executor,
  k: Pick<OperationReads, 'findMany'>,
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
  k: Pick<OperationReads, 'readCallbacks' | 'tables'>,
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
