import { sqlStatement } from './db/sql/run';

/**
 * The statements of used signatures (their rules: shared/requestSignatures.ts): the records of a
 * batch of signed POSTs (`USE_SIGNATURES`), and the writer's `s` (shared/operations/writer.ts),
 * where a signature is taken with its Idempotency-Key and its row. A part of what the kernel
 * writes, so of layer 2 (test/unit/imports.test.ts): it imports only the stores.
 */

/**
 * The statement that takes signatures, from the rows of `source` (merchant_id, environment,
 * signature, key: the Idempotency-Key it comes with or null, expires: Unix seconds), in key
 * order so that two such statements never wait on each other's signatures crosswise. Returns the
 * signatures taken, each with the key it was taken with (of two rows with one signature, one
 * is). Used alone (USE_SIGNATURES) and inside the writer's keyed creation
 * (shared/operations/writer.ts), where a signature is taken with its key and its row.
 */
export function takeSignaturesSql(source: string): string {
  return `insert into request_signatures (merchant_id, environment, signature, idempotency_key, expires_at)
          select merchant_id, environment, signature, key, to_timestamp(expires) from ${source}
           order by merchant_id, environment, signature
          on conflict (merchant_id, environment, signature) do nothing
          returning merchant_id, environment, signature, idempotency_key`;
}

/**
 * The signatures of the keyed creations of `keys` (rows with shared/idempotencySql.ts KEY_COLUMNS)
 * that bring one, as takeSignaturesSql reads them: each with its key, until its expiry.
 */
export const keyedSignaturesSql = (keys: string) =>
  `(select merchant_id, environment, signature, key::text as key, signature_expires as expires from ${keys} where signature is not null) x`;

/**
 * The condition on a keyed creation `x` (KEY_COLUMNS) that its key may be taken: it brings no
 * signature (the replay guard answered it), or its signature was taken with this very key, now
 * (in `taken`, takeSignaturesSql's rows) or before (the same request again: the key's rules
 * answer it). A signature first taken with another key, or none, takes no key, so writes no row.
 */
export const signedWithKeySql = (taken: string) => `signature is null
                             or exists (select 1 from ${taken} where ${taken}.merchant_id = x.merchant_id and ${taken}.environment = x.environment and ${taken}.signature = x.signature
                                                  and ${taken}.idempotency_key = x.key::text)
                             or exists (select 1 from request_signatures r where r.merchant_id = x.merchant_id and r.environment = x.environment
                                                  and r.signature = x.signature and r.idempotency_key = x.key::text)`;

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
