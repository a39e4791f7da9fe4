import { sqlStatement } from './db/sql/run';

/**
 * The idempotency keys' statements (their rules: shared/idempotency.ts): the key alone
 * (`TAKE_KEY`) and the keys of a batch of creations (`takeKeysSql`, the writer's `k`:
 * shared/operations/writer.ts). A part of what the kernel writes, so of layer 2
 * (test/unit/imports.test.ts): it imports only the stores.
 */

/**
 * The rules of the statement that takes a key (shared/idempotency.ts), shared by both forms. The
 * instant is the service clock's (shared/clock.ts), never Postgres's now(): a new row's
 * created_at is the request's now, and a key whose window ended by then is free again.
 */
const CONFLICT = `on conflict (merchant_id, environment, key) do update set
         method = excluded.method, path = excluded.path, request_hash = excluded.request_hash,
         status = excluded.status, response_status = excluded.response_status,
         response_headers = excluded.response_headers, response_body = excluded.response_body,
         created_at = excluded.created_at, locked_until = null, expires_at = excluded.expires_at
       where k.expires_at <= excluded.created_at
          or (k.status = 'in_progress' and k.locked_until <= excluded.created_at and k.request_hash = excluded.request_hash)`;

const COLUMNS = `(merchant_id, environment, key, method, path, request_hash, status,
          response_status, response_headers, response_body, created_at, expires_at)`;

/** A key's start and end, from the service clock's now (Unix ms) and the window (ms). */
const window = (nowMs: string, windowMs: string) =>
  `to_timestamp(${nowMs} / 1000.0), to_timestamp((${nowMs} + ${windowMs}) / 1000.0)`;

/** The idempotency key a creation is written under (shared/idempotency.ts `keyRow`), as the writer's keyed creation reads it. */
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

/** A KeyRow's columns as a json recordset reads them (the keyed creation's rows, after each row's id and patch). */
export const KEY_COLUMNS = `merchant_id text, environment text, key uuid, method text,
             path text, request_hash text, status text, response_status int, response_headers text, response_body text, window_ms bigint, now_ms bigint,
             signature text, signature_expires bigint`;

/**
 * The statement that takes many keys at once, from the rows of `source` (a CTE of the caller's
 * statement with the columns merchant_id, environment, key, method, path, request_hash, status,
 * response_status, response_headers (text), response_body (base64), window_ms, now_ms: the service
 * clock at the request, Unix ms), in key order so
 * that two such statements never wait on each other's keys crosswise. Returns the keys taken.
 */
export function takeKeysSql(source: string): string {
  return `insert into idempotency_keys as k ${COLUMNS}
       select merchant_id, environment, key, method, path, request_hash, status, response_status,
              response_headers::jsonb, decode(response_body, 'base64'), ${window('now_ms', 'window_ms')}
         from ${source} order by merchant_id, environment, key
       ${CONFLICT}
       returning k.merchant_id, k.environment, k.key`;
}

/**
 * The key alone, inside a route's transaction or after it (a refusal's answer): the same
 * statement ($12: the service clock at the request, Unix ms), waiting at most `$13` (e.g. '2000ms')
 * for a transaction holding the key. lock_timeout
 * is that bound while the statement waits, and its RETURNING sets it back, so the bound covers
 * this statement only; past it, the statement fails with a lock timeout (55P03).
 */
export const TAKE_KEY = sqlStatement(
  'take-idempotency-key',
  `with wait as (select current_setting('lock_timeout') as before, set_config('lock_timeout', $13::text, true))
       insert into idempotency_keys as k ${COLUMNS}
       select $1, $2, $3::uuid, $4, $5, $6, $7, $8::int, $9::jsonb, $10::bytea, ${window('$12::bigint', '$11::bigint')} from wait
       ${CONFLICT}
       returning (select set_config('lock_timeout', before, true) from wait) is not null as taken`,
);
