import { sqlStatement } from './run';

/**
 * The statement that takes signatures, from the rows of `source` (merchant_id, environment,
 * signature, key: the Idempotency-Key it comes with or null, expires: Unix seconds), in key
 * order so that two such statements never wait on each other's signatures crosswise. Returns the
 * signatures taken, each with the key it was taken with (of two rows with one signature, one
 * is). Used alone (USE_SIGNATURES) and inside the writer's keyed creation
 * (shared/db/sql/transitions.ts), where a signature is taken with its key and its row.
 */
export function takeSignaturesSql(source: string): string {
  return `insert into request_signatures (merchant_id, environment, signature, idempotency_key, expires_at)
          select merchant_id, environment, signature, key, to_timestamp(expires) from ${source}
           order by merchant_id, environment, signature
          on conflict (merchant_id, environment, signature) do nothing
          returning merchant_id, environment, signature, idempotency_key`;
}

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
        taken as (${takeSignaturesSql('(select x.* from x, quick) x')})
   select x.i,
          exists (select 1 from taken t
                   where t.merchant_id = x.merchant_id and t.environment = x.environment and t.signature = x.signature) as first,
          (select json_build_object('key', s.idempotency_key) from request_signatures s
            where s.merchant_id = x.merchant_id and s.environment = x.environment and s.signature = x.signature) as seen
     from x order by x.i`,
);
