import { sqlStatement } from './run';

/**
 * The replay records of a batch of signed POSTs (shared/requestSignatures.ts), in key order. $1:
 * [{i, merchant_id, environment, signature, key, expires}], each signature once. Per `i`: taken now
 * (`first`), or the key it was first taken with (`seen.key`; a record committed after the
 * statement's snapshot shows as neither). synchronous_commit is off for this statement alone: a
 * record matters once its request acts, and that act's synchronous commit flushes it too.
 */
export const USE_SIGNATURES = sqlStatement(
  'use-signatures',
  `with quick as (select set_config('synchronous_commit', 'off', true)),
        x as materialized (
          select * from json_to_recordset($1::json) as x(i int, merchant_id text, environment text, signature text, key text, expires bigint)),
        taken as (
          insert into request_signatures (merchant_id, environment, signature, idempotency_key, expires_at)
          select x.merchant_id, x.environment, x.signature, x.key, to_timestamp(x.expires) from x, quick
           order by x.merchant_id, x.environment, x.signature
          on conflict (merchant_id, environment, signature) do nothing
          returning merchant_id, environment, signature)
   select x.i,
          exists (select 1 from taken t
                   where t.merchant_id = x.merchant_id and t.environment = x.environment and t.signature = x.signature) as first,
          (select json_build_object('key', s.idempotency_key) from request_signatures s
            where s.merchant_id = x.merchant_id and s.environment = x.environment and s.signature = x.signature) as seen
     from x order by x.i`,
);
