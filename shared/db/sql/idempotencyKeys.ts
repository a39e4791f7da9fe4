import { sqlStatement } from './run';

/**
 * The one statement that takes an idempotency key (its rules: shared/idempotency.ts), from `$first`
 * on, twelve values in the order of `takeKeyValues`. Alone, inside a route's transaction, or at
 * the head of a route's statement (`with k as (...)`) that writes the route's work only if it
 * returned a row. While it waits for another transaction holding the key, lock_timeout is the
 * wait's bound (`$first + 10`, e.g. '2000ms'); its RETURNING sets lock_timeout back, so the bound
 * covers this statement only.
 */
export function takeKeySql(first = 1): string {
  const [merchant, environment, key, method, path, hash, status, resStatus, resHeaders, resBody, wait, windowMs] = Array.from({ length: 12 }, (_, i) => `$${first + i}`);
  return `with wait as (select current_setting('lock_timeout') as before, set_config('lock_timeout', ${wait}::text, true))
       insert into idempotency_keys as k
         (merchant_id, environment, key, method, path, request_hash, status,
          response_status, response_headers, response_body, expires_at)
       select ${merchant}, ${environment}, ${key}::uuid, ${method}, ${path}, ${hash}, ${status}, ${resStatus}::int, ${resHeaders}::jsonb, ${resBody}::bytea, now() + ${windowMs} * interval '1 millisecond' from wait
       on conflict (merchant_id, environment, key) do update set
         method = excluded.method, path = excluded.path, request_hash = excluded.request_hash,
         status = excluded.status, response_status = excluded.response_status,
         response_headers = excluded.response_headers, response_body = excluded.response_body,
         created_at = now(), locked_until = null, expires_at = excluded.expires_at
       where k.expires_at <= now()
          or (k.status = 'in_progress' and k.locked_until <= now() and k.request_hash = excluded.request_hash)
       returning (select set_config('lock_timeout', before, true) from wait) is not null as taken`;
}

export const TAKE_KEY_VALUES = 12;

/** The key alone: one row when it was taken, none when another request holds it. */
export const TAKE_KEY = sqlStatement('take-idempotency-key', takeKeySql(1));
