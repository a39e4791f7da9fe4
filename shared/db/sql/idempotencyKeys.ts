import { sqlStatement } from './run';

/**
 * The one statement that takes an idempotency key (its rules: shared/idempotency.ts), from `$first`
 * on, twelve values in the order of `takeKeyValues`. Alone, or at the head of a route's statement
 * (`with k as (...)`) that writes the route's work only if it returned a row.
 */
export function takeKeySql(first = 1): string {
  const [merchant, environment, key, method, path, hash, status, resStatus, resHeaders, resBody, lock, windowMs] = Array.from({ length: 12 }, (_, i) => `$${first + i}`);
  return `insert into idempotency_keys as k
         (merchant_id, environment, key, method, path, request_hash, status,
          response_status, response_headers, response_body, locked_until, expires_at)
       values (${merchant}, ${environment}, ${key}, ${method}, ${path}, ${hash}, ${status}, ${resStatus}, ${resHeaders}, ${resBody}, ${lock}, now() + ${windowMs} * interval '1 millisecond')
       on conflict (merchant_id, environment, key) do update set
         method = excluded.method, path = excluded.path, request_hash = excluded.request_hash,
         status = excluded.status, response_status = excluded.response_status,
         response_headers = excluded.response_headers, response_body = excluded.response_body,
         created_at = now(), locked_until = excluded.locked_until, expires_at = excluded.expires_at
       where k.expires_at <= now()
          or (k.status = 'in_progress' and k.locked_until <= now() and k.request_hash = excluded.request_hash)
       returning 1`;
}

export const TAKE_KEY_VALUES = 12;

/** The key alone: one row when it was taken, none when another request holds it. */
export const TAKE_KEY = sqlStatement('take-idempotency-key', takeKeySql(1));
