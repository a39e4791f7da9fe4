import { sqlStatement } from './run';

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
