import { sqlStatement } from './run';

/**
 * The replay records of signed POSTs (shared/requestSignatures.ts), for a batch of requests in one
 * round trip. $1: json array of {i, merchant_id, environment, signature, key, expires (Unix s)},
 * each signature once. Per element, by `i`: the signature taken now (`first`), or the key it was
 * first taken with (`seen.key`, read from the statement's snapshot: a record committed by a
 * concurrent request after that snapshot shows as neither, and the caller reads it again).
 * Inserted in key order, so two batches never wait on each other crosswise.
 *
 * It commits without waiting for its WAL flush (synchronous_commit off for this statement's own
 * transaction). A record matters only once its request has acted, and every act is a synchronous
 * commit of a later statement, whose WAL flush takes this record with it (the WAL is one
 * sequence). A crash can lose only the records of requests that had not acted yet.
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
