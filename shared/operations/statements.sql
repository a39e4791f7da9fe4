-- The statements of the operations kernel, as Postgres receives them, one clause a line.
-- Generated: `npm run sql:statements` (scripts/sql-statements.ts) renders them from each kind
-- (shared/kindRegistry.ts), its reads (shared/db/sql/operationReads.ts), the writer's four shapes
-- (shared/operations/writer.ts, composed of the parts their owner modules write) and a repeat's
-- or a late report's mark (shared/providers/callbackOutcome.ts). Do not edit it by hand: change
-- the fragments and run the script; test/unit/operations-statements.test.ts fails while it is stale.
-- Only whitespace differs from the statements' text.

-- ================================================================================================
-- payment
-- ================================================================================================

-- payment.sql.find: find-payment
select *
from payments o
where o.id = $1
  and o.method = 'mobile_money';

-- payment.sql.findMany: find-many-payment
select *
from payments o
where o.id = any(array(select unnest($1::text[])))
  and o.method = 'mobile_money';

-- payment.sql.readCallbacks: read-callbacks-payment
select c.id as cb_id,
  c.processed_at as cb_processed_at,
  to_jsonb(c) - 'raw_body' as cb_fields,
  o.*,
  (
    select coalesce(
      json_agg(json_build_object('id', w.id, 'events', w.events)), '[]'::json
    )
    from webhooks w
    where w.merchant_id = o.merchant_id
      and w.environment = o.environment
      and w.status = 'enabled'
  ) as cb_endpoints,
  (
    select coalesce(
      json_agg(json_build_object('id', a.id, 'owner', a.owner, 'kind', a.kind)), '[]'::json
    )
    from ledger_accounts a
    where a.environment = o.environment
      and a.currency = o.currency
      and a.owner in (o.merchant_id, 'platform', 'provider:' || o.provider)
  ) as cb_accounts
from provider_callbacks c
join payments o on o.id = c.object_id
  and o.method = 'mobile_money'
where c.id = any(array(select unnest($1::uuid[])))
  and c.object_kind = $2;

-- payment.sql.due: due-payment
select 1
from payments o
where o.status = any($1::text[])
  and o.method = 'mobile_money'
  and (
    o.window_ends_at < $2
      or (
        o.status = any($5::text[])
          and o.window_ends_at < $2::timestamptz + $6 * interval '1 millisecond'
      )
  )
  and (
    o.asked_at is null
      or o.asked_at < $2::timestamptz - least($3, $4 * power(2, least(o.asks - 1, 20))) * interval '1 millisecond'
  )
limit 1;

-- payment.sql.claimDue: claim-due-payment
select o.id, o.merchant_id, o.environment, o.status, o.version, o.asked_at, o.asks
from payments o
where o.status = any($1::text[])
  and o.method = 'mobile_money'
  and (
    o.window_ends_at < $2
      or (
        o.status = any($5::text[])
          and o.window_ends_at < $2::timestamptz + $6 * interval '1 millisecond'
      )
  )
  and (
    o.asked_at is null
      or o.asked_at < $2::timestamptz - least($3, $4 * power(2, least(o.asks - 1, 20))) * interval '1 millisecond'
  )
order by o.window_ends_at
limit $7
for update skip locked;

-- payment.sql.unsent: unsent-payment
select *
from payments o
where o.status = any($1::text[])
  and o.sent_at is null
  and o.created_at < $2
  and o.window_ends_at > $3
  and o.method = 'mobile_money'
order by o.created_at
limit $4;

-- payment.sql.create: create-payment
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(id text, patch json)
),
m as (
  insert into payments (
    id,
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    method,
    amount,
    amount_charged,
    amount_net,
    fee,
    fee_bearer,
    amount_refunded,
    reference,
    description,
    metadata,
    operator,
    phone,
    customer_email,
    customer_name,
    return_url,
    created,
    card,
    checkout_token,
    challenge_url,
    checkout_error,
    payment_link
  )
  select r.id,
    r.merchant_id,
    r.environment,
    r.status,
    r.currency,
    r.provider,
    r.provider_ref,
    r.failure_code,
    r.failure_message,
    r.version,
    r.completed,
    r.sent_at,
    r.window_ends_at,
    r.asked_at,
    r.asks,
    r.traceparent,
    r.method,
    r.amount,
    r.amount_charged,
    r.amount_net,
    r.fee,
    r.fee_bearer,
    r.amount_refunded,
    r.reference,
    r.description,
    r.metadata,
    r.operator,
    r.phone,
    r.customer_email,
    r.customer_name,
    r.return_url,
    r.created,
    r.card,
    r.checkout_token,
    r.challenge_url,
    r.checkout_error,
    r.payment_link
  from x
  cross join lateral json_populate_record(null::payments, x.patch) r
  order by r.merchant_id, r.environment, r.reference
  returning id, null::text as from_status, status as to_status, 'created' as reason
),
h as (
  insert into payment_status_changes (payment_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
)
select id
from m;

-- payment.sql.createKeyed: create-keyed-payment
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    patch json,
    merchant_id text,
    environment text,
    key uuid,
    method text,
    path text,
    request_hash text,
    status text,
    response_status int,
    response_headers text,
    response_body text,
    window_ms bigint,
    now_ms bigint,
    signature text,
    signature_expires bigint
  )
),
s as (
  insert into request_signatures (
    merchant_id, environment, signature, idempotency_key, expires_at
  )
  select merchant_id, environment, signature, key, to_timestamp(expires)
  from (
    select merchant_id, environment, signature, key::text as key, signature_expires as expires
    from x
    where signature is not null
  ) x
  order by merchant_id, environment, signature
  on conflict (merchant_id, environment, signature) do nothing
  returning merchant_id, environment, signature, idempotency_key
),
k as (
  insert into idempotency_keys as k (
    merchant_id,
    environment,
    key,
    method,
    path,
    request_hash,
    status,
    response_status,
    response_headers,
    response_body,
    created_at,
    expires_at
  )
  select merchant_id,
    environment,
    key,
    method,
    path,
    request_hash,
    status,
    response_status,
    response_headers::jsonb,
    decode(response_body, 'base64'),
    to_timestamp(now_ms / 1000.0),
    to_timestamp((now_ms + window_ms) / 1000.0)
  from (
    select *
    from x
    where signature is null
      or exists (
        select 1
        from s
        where s.merchant_id = x.merchant_id
          and s.environment = x.environment
          and s.signature = x.signature
          and s.idempotency_key = x.key::text
      )
      or exists (
        select 1
        from request_signatures r
        where r.merchant_id = x.merchant_id
          and r.environment = x.environment
          and r.signature = x.signature
          and r.idempotency_key = x.key::text
      )
  ) x
  order by merchant_id, environment, key
  on conflict (merchant_id, environment, key) do update set method = excluded.method,
    path = excluded.path,
    request_hash = excluded.request_hash,
    status = excluded.status,
    response_status = excluded.response_status,
    response_headers = excluded.response_headers,
    response_body = excluded.response_body,
    created_at = excluded.created_at,
    locked_until = null,
    expires_at = excluded.expires_at
  where k.expires_at <= excluded.created_at
    or (
      k.status = 'in_progress'
        and k.locked_until <= excluded.created_at
        and k.request_hash = excluded.request_hash
    )
  returning k.merchant_id, k.environment, k.key
),
m as (
  insert into payments (
    id,
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    method,
    amount,
    amount_charged,
    amount_net,
    fee,
    fee_bearer,
    amount_refunded,
    reference,
    description,
    metadata,
    operator,
    phone,
    customer_email,
    customer_name,
    return_url,
    created,
    card,
    checkout_token,
    challenge_url,
    checkout_error,
    payment_link
  )
  select r.id,
    r.merchant_id,
    r.environment,
    r.status,
    r.currency,
    r.provider,
    r.provider_ref,
    r.failure_code,
    r.failure_message,
    r.version,
    r.completed,
    r.sent_at,
    r.window_ends_at,
    r.asked_at,
    r.asks,
    r.traceparent,
    r.method,
    r.amount,
    r.amount_charged,
    r.amount_net,
    r.fee,
    r.fee_bearer,
    r.amount_refunded,
    r.reference,
    r.description,
    r.metadata,
    r.operator,
    r.phone,
    r.customer_email,
    r.customer_name,
    r.return_url,
    r.created,
    r.card,
    r.checkout_token,
    r.challenge_url,
    r.checkout_error,
    r.payment_link
  from x
  cross join lateral json_populate_record(null::payments, x.patch) r
  where exists (
    select 1
    from k
    where k.merchant_id = x.merchant_id
      and k.environment = x.environment
      and k.key = x.key
  )
  order by r.merchant_id, r.environment, r.reference
  returning id, null::text as from_status, status as to_status, 'created' as reason
),
h as (
  insert into payment_status_changes (payment_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
)
select id
from m;

-- payment.sql.change: change-payment
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    from_status text,
    from_version int,
    unsent boolean,
    patch json,
    to_status text,
    reason text,
    callback_id uuid
  )
),
m as (
  update payments o
  set (
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    method,
    amount,
    amount_charged,
    amount_net,
    fee,
    fee_bearer,
    amount_refunded,
    reference,
    description,
    metadata,
    operator,
    phone,
    customer_email,
    customer_name,
    return_url,
    created,
    card,
    checkout_token,
    challenge_url,
    checkout_error,
    payment_link,
    updated_at
  ) = (
    select r.merchant_id,
      r.environment,
      r.status,
      r.currency,
      r.provider,
      r.provider_ref,
      r.failure_code,
      r.failure_message,
      r.version,
      r.completed,
      r.sent_at,
      r.window_ends_at,
      r.asked_at,
      r.asks,
      r.traceparent,
      r.method,
      r.amount,
      r.amount_charged,
      r.amount_net,
      r.fee,
      r.fee_bearer,
      r.amount_refunded,
      r.reference,
      r.description,
      r.metadata,
      r.operator,
      r.phone,
      r.customer_email,
      r.customer_name,
      r.return_url,
      r.created,
      r.card,
      r.checkout_token,
      r.challenge_url,
      r.checkout_error,
      r.payment_link,
      r.updated_at
    from json_populate_record(o, x.patch) r
  )
  from x
  where o.id = any(array(select id from x))
    and o.id = x.id
    and o.status = x.from_status
    and o.version = x.from_version
    and (o.sent_at is null or x.unsent is not true)
    and not exists (
      select 1
      from provider_callbacks pc
      where pc.id = x.callback_id
        and pc.processed_at is not null
    )
    and o.method = 'mobile_money'
  returning o.id, x.from_status, x.to_status, x.reason, x.callback_id
),
h as (
  insert into payment_status_changes (payment_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
),
ev as (
  select v.*
  from json_to_recordset($3::json) as v(
    object_id text,
    id text,
    merchant_id text,
    environment text,
    type text,
    object_version int,
    created bigint,
    body text
  )
  join m on m.id = v.object_id
),
e as (
  insert into events (
    id, merchant_id, environment, type, object_id, object_version, created, body
  )
  select id, merchant_id, environment, type, object_id, object_version, created, body::jsonb
  from ev
),
d as (
  insert into webhook_deliveries (id, event_id, webhook_id, created, redelivery)
  select x.id, ev.id, x.webhook_id, ev.created, 0
  from json_to_recordset($4::json) as x(object_id text, id text, webhook_id text)
  join ev on ev.object_id = x.object_id
),
lt as (
  insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id)
  select x.id, x.kind, x.reference_id, x.environment, x.currency, x.merchant_id
  from json_to_recordset($5::json) as x(
    object_id text,
    id uuid,
    kind text,
    reference_id text,
    environment text,
    currency text,
    merchant_id text
  )
  join m on m.id = x.object_id
  on conflict (kind, reference_id) do nothing
  returning id
),
le as (
  insert into ledger_entries (transaction_id, account_id, amount, unfolded)
  select lt.id, x.account_id, x.amount, x.unfolded
  from json_to_recordset($6::json) as x(
    transaction_id uuid, account_id bigint, amount bigint, unfolded boolean
  )
  join lt on lt.id = x.transaction_id
),
c as (
  update provider_callbacks pc
  set processed_at = now(), outcome = 'applied'
  from m
  where pc.id = m.callback_id
    and pc.processed_at is null
)
select id
from m;

-- payment.sql.changeRow: change-row-payment
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    from_status text,
    from_version int,
    unsent boolean,
    patch json,
    to_status text,
    reason text,
    callback_id uuid
  )
),
m as (
  update payments o
  set (
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    method,
    amount,
    amount_charged,
    amount_net,
    fee,
    fee_bearer,
    amount_refunded,
    reference,
    description,
    metadata,
    operator,
    phone,
    customer_email,
    customer_name,
    return_url,
    created,
    card,
    checkout_token,
    challenge_url,
    checkout_error,
    payment_link,
    updated_at
  ) = (
    select r.merchant_id,
      r.environment,
      r.status,
      r.currency,
      r.provider,
      r.provider_ref,
      r.failure_code,
      r.failure_message,
      r.version,
      r.completed,
      r.sent_at,
      r.window_ends_at,
      r.asked_at,
      r.asks,
      r.traceparent,
      r.method,
      r.amount,
      r.amount_charged,
      r.amount_net,
      r.fee,
      r.fee_bearer,
      r.amount_refunded,
      r.reference,
      r.description,
      r.metadata,
      r.operator,
      r.phone,
      r.customer_email,
      r.customer_name,
      r.return_url,
      r.created,
      r.card,
      r.checkout_token,
      r.challenge_url,
      r.checkout_error,
      r.payment_link,
      r.updated_at
    from json_populate_record(o, x.patch) r
  )
  from x
  where o.id = any(array(select id from x))
    and o.id = x.id
    and o.status = x.from_status
    and o.version = x.from_version
    and (o.sent_at is null or x.unsent is not true)
    and not exists (
      select 1
      from provider_callbacks pc
      where pc.id = x.callback_id
        and pc.processed_at is not null
    )
    and o.method = 'mobile_money'
  returning o.id, x.from_status, x.to_status, x.reason, x.callback_id
)
select id
from m;

-- payment.sql.mark: mark-callbacks-payment
with x as materialized (
  select *
  from jsonb_to_recordset($1::jsonb) as x(
    callback_id uuid, outcome text, id text, from_status text, from_version int
  )
)
update provider_callbacks pc
set processed_at = now(), outcome = x.outcome
from x
where pc.id = any(array(select callback_id from x))
  and pc.id = x.callback_id
  and pc.processed_at is null
  and exists (
    select 1
    from payments o
    where o.id = x.id
      and o.status = x.from_status
      and o.version = x.from_version
      and o.method = 'mobile_money'
  )
returning pc.id;

-- ================================================================================================
-- refund
-- ================================================================================================

-- refund.sql.find: find-refund
select *
from refunds o
where o.id = $1;

-- refund.sql.findMany: find-many-refund
select *
from refunds o
where o.id = any(array(select unnest($1::text[])));

-- refund.sql.readCallbacks: read-callbacks-refund
select c.id as cb_id,
  c.processed_at as cb_processed_at,
  to_jsonb(c) - 'raw_body' as cb_fields,
  o.*,
  (
    select coalesce(
      json_agg(json_build_object('id', w.id, 'events', w.events)), '[]'::json
    )
    from webhooks w
    where w.merchant_id = o.merchant_id
      and w.environment = o.environment
      and w.status = 'enabled'
  ) as cb_endpoints,
  (
    select coalesce(
      json_agg(json_build_object('id', a.id, 'owner', a.owner, 'kind', a.kind)), '[]'::json
    )
    from ledger_accounts a
    where a.environment = o.environment
      and a.currency = o.currency
      and a.owner in (o.merchant_id, 'platform', 'provider:' || o.provider)
  ) as cb_accounts
from provider_callbacks c
join refunds o on o.id = c.object_id
where c.id = any(array(select unnest($1::uuid[])))
  and c.object_kind = $2;

-- refund.sql.due: due-refund
select 1
from refunds o
where o.status = any($1::text[])
  and (
    o.window_ends_at < $2
      or (
        o.status = any($5::text[])
          and o.window_ends_at < $2::timestamptz + $6 * interval '1 millisecond'
      )
  )
  and (
    o.asked_at is null
      or o.asked_at < $2::timestamptz - least($3, $4 * power(2, least(o.asks - 1, 20))) * interval '1 millisecond'
  )
limit 1;

-- refund.sql.claimDue: claim-due-refund
select o.id, o.merchant_id, o.environment, o.status, o.version, o.asked_at, o.asks
from refunds o
where o.status = any($1::text[])
  and (
    o.window_ends_at < $2
      or (
        o.status = any($5::text[])
          and o.window_ends_at < $2::timestamptz + $6 * interval '1 millisecond'
      )
  )
  and (
    o.asked_at is null
      or o.asked_at < $2::timestamptz - least($3, $4 * power(2, least(o.asks - 1, 20))) * interval '1 millisecond'
  )
order by o.window_ends_at
limit $7
for update skip locked;

-- refund.sql.unsent: unsent-refund
select *
from refunds o
where o.status = any($1::text[])
  and o.sent_at is null
  and o.created_at < $2
  and o.window_ends_at > $3
order by o.created_at
limit $4;

-- refund.sql.create: create-refund
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(id text, patch json)
),
m as (
  insert into refunds (
    id,
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    payment_id,
    amount,
    reason,
    operator,
    phone,
    created
  )
  select r.id,
    r.merchant_id,
    r.environment,
    r.status,
    r.currency,
    r.provider,
    r.provider_ref,
    r.failure_code,
    r.failure_message,
    r.version,
    r.completed,
    r.sent_at,
    r.window_ends_at,
    r.asked_at,
    r.asks,
    r.traceparent,
    r.payment_id,
    r.amount,
    r.reason,
    r.operator,
    r.phone,
    r.created
  from x
  cross join lateral json_populate_record(null::refunds, x.patch) r
  order by r.id
  returning id, null::text as from_status, status as to_status, 'created' as reason
),
h as (
  insert into refund_status_changes (refund_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
)
select id
from m;

-- refund.sql.createKeyed: create-keyed-refund
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    patch json,
    merchant_id text,
    environment text,
    key uuid,
    method text,
    path text,
    request_hash text,
    status text,
    response_status int,
    response_headers text,
    response_body text,
    window_ms bigint,
    now_ms bigint,
    signature text,
    signature_expires bigint
  )
),
s as (
  insert into request_signatures (
    merchant_id, environment, signature, idempotency_key, expires_at
  )
  select merchant_id, environment, signature, key, to_timestamp(expires)
  from (
    select merchant_id, environment, signature, key::text as key, signature_expires as expires
    from x
    where signature is not null
  ) x
  order by merchant_id, environment, signature
  on conflict (merchant_id, environment, signature) do nothing
  returning merchant_id, environment, signature, idempotency_key
),
k as (
  insert into idempotency_keys as k (
    merchant_id,
    environment,
    key,
    method,
    path,
    request_hash,
    status,
    response_status,
    response_headers,
    response_body,
    created_at,
    expires_at
  )
  select merchant_id,
    environment,
    key,
    method,
    path,
    request_hash,
    status,
    response_status,
    response_headers::jsonb,
    decode(response_body, 'base64'),
    to_timestamp(now_ms / 1000.0),
    to_timestamp((now_ms + window_ms) / 1000.0)
  from (
    select *
    from x
    where signature is null
      or exists (
        select 1
        from s
        where s.merchant_id = x.merchant_id
          and s.environment = x.environment
          and s.signature = x.signature
          and s.idempotency_key = x.key::text
      )
      or exists (
        select 1
        from request_signatures r
        where r.merchant_id = x.merchant_id
          and r.environment = x.environment
          and r.signature = x.signature
          and r.idempotency_key = x.key::text
      )
  ) x
  order by merchant_id, environment, key
  on conflict (merchant_id, environment, key) do update set method = excluded.method,
    path = excluded.path,
    request_hash = excluded.request_hash,
    status = excluded.status,
    response_status = excluded.response_status,
    response_headers = excluded.response_headers,
    response_body = excluded.response_body,
    created_at = excluded.created_at,
    locked_until = null,
    expires_at = excluded.expires_at
  where k.expires_at <= excluded.created_at
    or (
      k.status = 'in_progress'
        and k.locked_until <= excluded.created_at
        and k.request_hash = excluded.request_hash
    )
  returning k.merchant_id, k.environment, k.key
),
m as (
  insert into refunds (
    id,
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    payment_id,
    amount,
    reason,
    operator,
    phone,
    created
  )
  select r.id,
    r.merchant_id,
    r.environment,
    r.status,
    r.currency,
    r.provider,
    r.provider_ref,
    r.failure_code,
    r.failure_message,
    r.version,
    r.completed,
    r.sent_at,
    r.window_ends_at,
    r.asked_at,
    r.asks,
    r.traceparent,
    r.payment_id,
    r.amount,
    r.reason,
    r.operator,
    r.phone,
    r.created
  from x
  cross join lateral json_populate_record(null::refunds, x.patch) r
  where exists (
    select 1
    from k
    where k.merchant_id = x.merchant_id
      and k.environment = x.environment
      and k.key = x.key
  )
  order by r.id
  returning id, null::text as from_status, status as to_status, 'created' as reason
),
h as (
  insert into refund_status_changes (refund_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
)
select id
from m;

-- refund.sql.change: change-refund
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    from_status text,
    from_version int,
    unsent boolean,
    patch json,
    to_status text,
    reason text,
    callback_id uuid
  )
),
m as (
  update refunds o
  set (
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    payment_id,
    amount,
    reason,
    operator,
    phone,
    created,
    updated_at
  ) = (
    select r.merchant_id,
      r.environment,
      r.status,
      r.currency,
      r.provider,
      r.provider_ref,
      r.failure_code,
      r.failure_message,
      r.version,
      r.completed,
      r.sent_at,
      r.window_ends_at,
      r.asked_at,
      r.asks,
      r.traceparent,
      r.payment_id,
      r.amount,
      r.reason,
      r.operator,
      r.phone,
      r.created,
      r.updated_at
    from json_populate_record(o, x.patch) r
  )
  from x
  where o.id = any(array(select id from x))
    and o.id = x.id
    and o.status = x.from_status
    and o.version = x.from_version
    and (o.sent_at is null or x.unsent is not true)
    and not exists (
      select 1
      from provider_callbacks pc
      where pc.id = x.callback_id
        and pc.processed_at is not null
    )
  returning o.id, x.from_status, x.to_status, x.reason, x.callback_id
),
h as (
  insert into refund_status_changes (refund_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
),
ev as (
  select v.*
  from json_to_recordset($3::json) as v(
    object_id text,
    id text,
    merchant_id text,
    environment text,
    type text,
    object_version int,
    created bigint,
    body text
  )
  join m on m.id = v.object_id
),
e as (
  insert into events (
    id, merchant_id, environment, type, object_id, object_version, created, body
  )
  select id, merchant_id, environment, type, object_id, object_version, created, body::jsonb
  from ev
),
d as (
  insert into webhook_deliveries (id, event_id, webhook_id, created, redelivery)
  select x.id, ev.id, x.webhook_id, ev.created, 0
  from json_to_recordset($4::json) as x(object_id text, id text, webhook_id text)
  join ev on ev.object_id = x.object_id
),
lt as (
  insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id)
  select x.id, x.kind, x.reference_id, x.environment, x.currency, x.merchant_id
  from json_to_recordset($5::json) as x(
    object_id text,
    id uuid,
    kind text,
    reference_id text,
    environment text,
    currency text,
    merchant_id text
  )
  join m on m.id = x.object_id
  on conflict (kind, reference_id) do nothing
  returning id
),
le as (
  insert into ledger_entries (transaction_id, account_id, amount, unfolded)
  select lt.id, x.account_id, x.amount, x.unfolded
  from json_to_recordset($6::json) as x(
    transaction_id uuid, account_id bigint, amount bigint, unfolded boolean
  )
  join lt on lt.id = x.transaction_id
),
c as (
  update provider_callbacks pc
  set processed_at = now(), outcome = 'applied'
  from m
  where pc.id = m.callback_id
    and pc.processed_at is null
)
select id
from m;

-- refund.sql.changeRow: change-row-refund
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    from_status text,
    from_version int,
    unsent boolean,
    patch json,
    to_status text,
    reason text,
    callback_id uuid
  )
),
m as (
  update refunds o
  set (
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    payment_id,
    amount,
    reason,
    operator,
    phone,
    created,
    updated_at
  ) = (
    select r.merchant_id,
      r.environment,
      r.status,
      r.currency,
      r.provider,
      r.provider_ref,
      r.failure_code,
      r.failure_message,
      r.version,
      r.completed,
      r.sent_at,
      r.window_ends_at,
      r.asked_at,
      r.asks,
      r.traceparent,
      r.payment_id,
      r.amount,
      r.reason,
      r.operator,
      r.phone,
      r.created,
      r.updated_at
    from json_populate_record(o, x.patch) r
  )
  from x
  where o.id = any(array(select id from x))
    and o.id = x.id
    and o.status = x.from_status
    and o.version = x.from_version
    and (o.sent_at is null or x.unsent is not true)
    and not exists (
      select 1
      from provider_callbacks pc
      where pc.id = x.callback_id
        and pc.processed_at is not null
    )
  returning o.id, x.from_status, x.to_status, x.reason, x.callback_id
)
select id
from m;

-- refund.sql.mark: mark-callbacks-refund
with x as materialized (
  select *
  from jsonb_to_recordset($1::jsonb) as x(
    callback_id uuid, outcome text, id text, from_status text, from_version int
  )
)
update provider_callbacks pc
set processed_at = now(), outcome = x.outcome
from x
where pc.id = any(array(select callback_id from x))
  and pc.id = x.callback_id
  and pc.processed_at is null
  and exists (
    select 1
    from refunds o
    where o.id = x.id
      and o.status = x.from_status
      and o.version = x.from_version
  )
returning pc.id;

-- ================================================================================================
-- payout
-- ================================================================================================

-- payout.sql.find: find-payout
select *
from payouts o
where o.id = $1;

-- payout.sql.findMany: find-many-payout
select *
from payouts o
where o.id = any(array(select unnest($1::text[])));

-- payout.sql.readCallbacks: read-callbacks-payout
select c.id as cb_id,
  c.processed_at as cb_processed_at,
  to_jsonb(c) - 'raw_body' as cb_fields,
  o.*,
  (
    select coalesce(
      json_agg(json_build_object('id', w.id, 'events', w.events)), '[]'::json
    )
    from webhooks w
    where w.merchant_id = o.merchant_id
      and w.environment = o.environment
      and w.status = 'enabled'
  ) as cb_endpoints,
  (
    select coalesce(
      json_agg(json_build_object('id', a.id, 'owner', a.owner, 'kind', a.kind)), '[]'::json
    )
    from ledger_accounts a
    where a.environment = o.environment
      and a.currency = o.currency
      and a.owner in (o.merchant_id, 'platform', 'provider:' || o.provider)
  ) as cb_accounts
from provider_callbacks c
join payouts o on o.id = c.object_id
where c.id = any(array(select unnest($1::uuid[])))
  and c.object_kind = $2;

-- payout.sql.due: due-payout
select 1
from payouts o
where o.status = any($1::text[])
  and (
    o.window_ends_at < $2
      or (
        o.status = any($5::text[])
          and o.window_ends_at < $2::timestamptz + $6 * interval '1 millisecond'
      )
  )
  and (
    o.asked_at is null
      or o.asked_at < $2::timestamptz - least($3, $4 * power(2, least(o.asks - 1, 20))) * interval '1 millisecond'
  )
limit 1;

-- payout.sql.claimDue: claim-due-payout
select o.id, o.merchant_id, o.environment, o.status, o.version, o.asked_at, o.asks
from payouts o
where o.status = any($1::text[])
  and (
    o.window_ends_at < $2
      or (
        o.status = any($5::text[])
          and o.window_ends_at < $2::timestamptz + $6 * interval '1 millisecond'
      )
  )
  and (
    o.asked_at is null
      or o.asked_at < $2::timestamptz - least($3, $4 * power(2, least(o.asks - 1, 20))) * interval '1 millisecond'
  )
order by o.window_ends_at
limit $7
for update skip locked;

-- payout.sql.unsent: unsent-payout
select *
from payouts o
where o.status = any($1::text[])
  and o.sent_at is null
  and o.created_at < $2
  and o.window_ends_at > $3
order by o.created_at
limit $4;

-- payout.sql.create: create-payout
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(id text, patch json)
),
m as (
  insert into payouts (
    id,
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    amount,
    fee,
    method,
    operator,
    phone,
    reference,
    description,
    metadata,
    created
  )
  select r.id,
    r.merchant_id,
    r.environment,
    r.status,
    r.currency,
    r.provider,
    r.provider_ref,
    r.failure_code,
    r.failure_message,
    r.version,
    r.completed,
    r.sent_at,
    r.window_ends_at,
    r.asked_at,
    r.asks,
    r.traceparent,
    r.amount,
    r.fee,
    r.method,
    r.operator,
    r.phone,
    r.reference,
    r.description,
    r.metadata,
    r.created
  from x
  cross join lateral json_populate_record(null::payouts, x.patch) r
  order by r.merchant_id, r.environment, r.reference
  returning id, null::text as from_status, status as to_status, 'created' as reason
),
h as (
  insert into payout_status_changes (payout_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
)
select id
from m;

-- payout.sql.createKeyed: create-keyed-payout
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    patch json,
    merchant_id text,
    environment text,
    key uuid,
    method text,
    path text,
    request_hash text,
    status text,
    response_status int,
    response_headers text,
    response_body text,
    window_ms bigint,
    now_ms bigint,
    signature text,
    signature_expires bigint
  )
),
s as (
  insert into request_signatures (
    merchant_id, environment, signature, idempotency_key, expires_at
  )
  select merchant_id, environment, signature, key, to_timestamp(expires)
  from (
    select merchant_id, environment, signature, key::text as key, signature_expires as expires
    from x
    where signature is not null
  ) x
  order by merchant_id, environment, signature
  on conflict (merchant_id, environment, signature) do nothing
  returning merchant_id, environment, signature, idempotency_key
),
k as (
  insert into idempotency_keys as k (
    merchant_id,
    environment,
    key,
    method,
    path,
    request_hash,
    status,
    response_status,
    response_headers,
    response_body,
    created_at,
    expires_at
  )
  select merchant_id,
    environment,
    key,
    method,
    path,
    request_hash,
    status,
    response_status,
    response_headers::jsonb,
    decode(response_body, 'base64'),
    to_timestamp(now_ms / 1000.0),
    to_timestamp((now_ms + window_ms) / 1000.0)
  from (
    select *
    from x
    where signature is null
      or exists (
        select 1
        from s
        where s.merchant_id = x.merchant_id
          and s.environment = x.environment
          and s.signature = x.signature
          and s.idempotency_key = x.key::text
      )
      or exists (
        select 1
        from request_signatures r
        where r.merchant_id = x.merchant_id
          and r.environment = x.environment
          and r.signature = x.signature
          and r.idempotency_key = x.key::text
      )
  ) x
  order by merchant_id, environment, key
  on conflict (merchant_id, environment, key) do update set method = excluded.method,
    path = excluded.path,
    request_hash = excluded.request_hash,
    status = excluded.status,
    response_status = excluded.response_status,
    response_headers = excluded.response_headers,
    response_body = excluded.response_body,
    created_at = excluded.created_at,
    locked_until = null,
    expires_at = excluded.expires_at
  where k.expires_at <= excluded.created_at
    or (
      k.status = 'in_progress'
        and k.locked_until <= excluded.created_at
        and k.request_hash = excluded.request_hash
    )
  returning k.merchant_id, k.environment, k.key
),
m as (
  insert into payouts (
    id,
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    amount,
    fee,
    method,
    operator,
    phone,
    reference,
    description,
    metadata,
    created
  )
  select r.id,
    r.merchant_id,
    r.environment,
    r.status,
    r.currency,
    r.provider,
    r.provider_ref,
    r.failure_code,
    r.failure_message,
    r.version,
    r.completed,
    r.sent_at,
    r.window_ends_at,
    r.asked_at,
    r.asks,
    r.traceparent,
    r.amount,
    r.fee,
    r.method,
    r.operator,
    r.phone,
    r.reference,
    r.description,
    r.metadata,
    r.created
  from x
  cross join lateral json_populate_record(null::payouts, x.patch) r
  where exists (
    select 1
    from k
    where k.merchant_id = x.merchant_id
      and k.environment = x.environment
      and k.key = x.key
  )
  order by r.merchant_id, r.environment, r.reference
  returning id, null::text as from_status, status as to_status, 'created' as reason
),
h as (
  insert into payout_status_changes (payout_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
)
select id
from m;

-- payout.sql.change: change-payout
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    from_status text,
    from_version int,
    unsent boolean,
    patch json,
    to_status text,
    reason text,
    callback_id uuid
  )
),
m as (
  update payouts o
  set (
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    amount,
    fee,
    method,
    operator,
    phone,
    reference,
    description,
    metadata,
    created,
    updated_at
  ) = (
    select r.merchant_id,
      r.environment,
      r.status,
      r.currency,
      r.provider,
      r.provider_ref,
      r.failure_code,
      r.failure_message,
      r.version,
      r.completed,
      r.sent_at,
      r.window_ends_at,
      r.asked_at,
      r.asks,
      r.traceparent,
      r.amount,
      r.fee,
      r.method,
      r.operator,
      r.phone,
      r.reference,
      r.description,
      r.metadata,
      r.created,
      r.updated_at
    from json_populate_record(o, x.patch) r
  )
  from x
  where o.id = any(array(select id from x))
    and o.id = x.id
    and o.status = x.from_status
    and o.version = x.from_version
    and (o.sent_at is null or x.unsent is not true)
    and not exists (
      select 1
      from provider_callbacks pc
      where pc.id = x.callback_id
        and pc.processed_at is not null
    )
  returning o.id, x.from_status, x.to_status, x.reason, x.callback_id
),
h as (
  insert into payout_status_changes (payout_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
),
ev as (
  select v.*
  from json_to_recordset($3::json) as v(
    object_id text,
    id text,
    merchant_id text,
    environment text,
    type text,
    object_version int,
    created bigint,
    body text
  )
  join m on m.id = v.object_id
),
e as (
  insert into events (
    id, merchant_id, environment, type, object_id, object_version, created, body
  )
  select id, merchant_id, environment, type, object_id, object_version, created, body::jsonb
  from ev
),
d as (
  insert into webhook_deliveries (id, event_id, webhook_id, created, redelivery)
  select x.id, ev.id, x.webhook_id, ev.created, 0
  from json_to_recordset($4::json) as x(object_id text, id text, webhook_id text)
  join ev on ev.object_id = x.object_id
),
lt as (
  insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id)
  select x.id, x.kind, x.reference_id, x.environment, x.currency, x.merchant_id
  from json_to_recordset($5::json) as x(
    object_id text,
    id uuid,
    kind text,
    reference_id text,
    environment text,
    currency text,
    merchant_id text
  )
  join m on m.id = x.object_id
  on conflict (kind, reference_id) do nothing
  returning id
),
le as (
  insert into ledger_entries (transaction_id, account_id, amount, unfolded)
  select lt.id, x.account_id, x.amount, x.unfolded
  from json_to_recordset($6::json) as x(
    transaction_id uuid, account_id bigint, amount bigint, unfolded boolean
  )
  join lt on lt.id = x.transaction_id
),
c as (
  update provider_callbacks pc
  set processed_at = now(), outcome = 'applied'
  from m
  where pc.id = m.callback_id
    and pc.processed_at is null
)
select id
from m;

-- payout.sql.changeRow: change-row-payout
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    from_status text,
    from_version int,
    unsent boolean,
    patch json,
    to_status text,
    reason text,
    callback_id uuid
  )
),
m as (
  update payouts o
  set (
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    amount,
    fee,
    method,
    operator,
    phone,
    reference,
    description,
    metadata,
    created,
    updated_at
  ) = (
    select r.merchant_id,
      r.environment,
      r.status,
      r.currency,
      r.provider,
      r.provider_ref,
      r.failure_code,
      r.failure_message,
      r.version,
      r.completed,
      r.sent_at,
      r.window_ends_at,
      r.asked_at,
      r.asks,
      r.traceparent,
      r.amount,
      r.fee,
      r.method,
      r.operator,
      r.phone,
      r.reference,
      r.description,
      r.metadata,
      r.created,
      r.updated_at
    from json_populate_record(o, x.patch) r
  )
  from x
  where o.id = any(array(select id from x))
    and o.id = x.id
    and o.status = x.from_status
    and o.version = x.from_version
    and (o.sent_at is null or x.unsent is not true)
    and not exists (
      select 1
      from provider_callbacks pc
      where pc.id = x.callback_id
        and pc.processed_at is not null
    )
  returning o.id, x.from_status, x.to_status, x.reason, x.callback_id
)
select id
from m;

-- payout.sql.mark: mark-callbacks-payout
with x as materialized (
  select *
  from jsonb_to_recordset($1::jsonb) as x(
    callback_id uuid, outcome text, id text, from_status text, from_version int
  )
)
update provider_callbacks pc
set processed_at = now(), outcome = x.outcome
from x
where pc.id = any(array(select callback_id from x))
  and pc.id = x.callback_id
  and pc.processed_at is null
  and exists (
    select 1
    from payouts o
    where o.id = x.id
      and o.status = x.from_status
      and o.version = x.from_version
  )
returning pc.id;

-- ================================================================================================
-- card_payment
-- ================================================================================================

-- card_payment.sql.find: find-card_payment
select *
from payments o
where o.id = $1
  and o.method = 'card';

-- card_payment.sql.findMany: find-many-card_payment
select *
from payments o
where o.id = any(array(select unnest($1::text[])))
  and o.method = 'card';

-- card_payment.sql.readCallbacks: read-callbacks-card_payment
select c.id as cb_id,
  c.processed_at as cb_processed_at,
  to_jsonb(c) - 'raw_body' as cb_fields,
  o.*,
  (
    select coalesce(
      json_agg(json_build_object('id', w.id, 'events', w.events)), '[]'::json
    )
    from webhooks w
    where w.merchant_id = o.merchant_id
      and w.environment = o.environment
      and w.status = 'enabled'
  ) as cb_endpoints,
  (
    select coalesce(
      json_agg(json_build_object('id', a.id, 'owner', a.owner, 'kind', a.kind)), '[]'::json
    )
    from ledger_accounts a
    where a.environment = o.environment
      and a.currency = o.currency
      and a.owner in (o.merchant_id, 'platform', 'provider:' || o.provider)
  ) as cb_accounts
from provider_callbacks c
join payments o on o.id = c.object_id
  and o.method = 'card'
where c.id = any(array(select unnest($1::uuid[])))
  and c.object_kind = $2;

-- card_payment.sql.due: due-card_payment
select 1
from payments o
where o.status = any($1::text[])
  and o.method = 'card'
  and (
    o.window_ends_at < $2
      or (
        o.status = any($5::text[])
          and o.window_ends_at < $2::timestamptz + $6 * interval '1 millisecond'
      )
  )
  and (
    o.asked_at is null
      or o.asked_at < $2::timestamptz - least($3, $4 * power(2, least(o.asks - 1, 20))) * interval '1 millisecond'
  )
limit 1;

-- card_payment.sql.claimDue: claim-due-card_payment
select o.id, o.merchant_id, o.environment, o.status, o.version, o.asked_at, o.asks
from payments o
where o.status = any($1::text[])
  and o.method = 'card'
  and (
    o.window_ends_at < $2
      or (
        o.status = any($5::text[])
          and o.window_ends_at < $2::timestamptz + $6 * interval '1 millisecond'
      )
  )
  and (
    o.asked_at is null
      or o.asked_at < $2::timestamptz - least($3, $4 * power(2, least(o.asks - 1, 20))) * interval '1 millisecond'
  )
order by o.window_ends_at
limit $7
for update skip locked;

-- card_payment.sql.unsent: unsent-card_payment
select *
from payments o
where o.status = any($1::text[])
  and o.sent_at is null
  and o.created_at < $2
  and o.window_ends_at > $3
  and o.method = 'card'
order by o.created_at
limit $4;

-- card_payment.sql.create: create-card_payment
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(id text, patch json)
),
m as (
  insert into payments (
    id,
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    method,
    amount,
    amount_charged,
    amount_net,
    fee,
    fee_bearer,
    amount_refunded,
    reference,
    description,
    metadata,
    operator,
    phone,
    customer_email,
    customer_name,
    return_url,
    created,
    card,
    checkout_token,
    challenge_url,
    checkout_error,
    payment_link
  )
  select r.id,
    r.merchant_id,
    r.environment,
    r.status,
    r.currency,
    r.provider,
    r.provider_ref,
    r.failure_code,
    r.failure_message,
    r.version,
    r.completed,
    r.sent_at,
    r.window_ends_at,
    r.asked_at,
    r.asks,
    r.traceparent,
    r.method,
    r.amount,
    r.amount_charged,
    r.amount_net,
    r.fee,
    r.fee_bearer,
    r.amount_refunded,
    r.reference,
    r.description,
    r.metadata,
    r.operator,
    r.phone,
    r.customer_email,
    r.customer_name,
    r.return_url,
    r.created,
    r.card,
    r.checkout_token,
    r.challenge_url,
    r.checkout_error,
    r.payment_link
  from x
  cross join lateral json_populate_record(null::payments, x.patch) r
  order by r.merchant_id, r.environment, r.reference
  returning id, null::text as from_status, status as to_status, 'created' as reason
),
h as (
  insert into payment_status_changes (payment_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
)
select id
from m;

-- card_payment.sql.createKeyed: create-keyed-card_payment
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    patch json,
    merchant_id text,
    environment text,
    key uuid,
    method text,
    path text,
    request_hash text,
    status text,
    response_status int,
    response_headers text,
    response_body text,
    window_ms bigint,
    now_ms bigint,
    signature text,
    signature_expires bigint
  )
),
s as (
  insert into request_signatures (
    merchant_id, environment, signature, idempotency_key, expires_at
  )
  select merchant_id, environment, signature, key, to_timestamp(expires)
  from (
    select merchant_id, environment, signature, key::text as key, signature_expires as expires
    from x
    where signature is not null
  ) x
  order by merchant_id, environment, signature
  on conflict (merchant_id, environment, signature) do nothing
  returning merchant_id, environment, signature, idempotency_key
),
k as (
  insert into idempotency_keys as k (
    merchant_id,
    environment,
    key,
    method,
    path,
    request_hash,
    status,
    response_status,
    response_headers,
    response_body,
    created_at,
    expires_at
  )
  select merchant_id,
    environment,
    key,
    method,
    path,
    request_hash,
    status,
    response_status,
    response_headers::jsonb,
    decode(response_body, 'base64'),
    to_timestamp(now_ms / 1000.0),
    to_timestamp((now_ms + window_ms) / 1000.0)
  from (
    select *
    from x
    where signature is null
      or exists (
        select 1
        from s
        where s.merchant_id = x.merchant_id
          and s.environment = x.environment
          and s.signature = x.signature
          and s.idempotency_key = x.key::text
      )
      or exists (
        select 1
        from request_signatures r
        where r.merchant_id = x.merchant_id
          and r.environment = x.environment
          and r.signature = x.signature
          and r.idempotency_key = x.key::text
      )
  ) x
  order by merchant_id, environment, key
  on conflict (merchant_id, environment, key) do update set method = excluded.method,
    path = excluded.path,
    request_hash = excluded.request_hash,
    status = excluded.status,
    response_status = excluded.response_status,
    response_headers = excluded.response_headers,
    response_body = excluded.response_body,
    created_at = excluded.created_at,
    locked_until = null,
    expires_at = excluded.expires_at
  where k.expires_at <= excluded.created_at
    or (
      k.status = 'in_progress'
        and k.locked_until <= excluded.created_at
        and k.request_hash = excluded.request_hash
    )
  returning k.merchant_id, k.environment, k.key
),
m as (
  insert into payments (
    id,
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    method,
    amount,
    amount_charged,
    amount_net,
    fee,
    fee_bearer,
    amount_refunded,
    reference,
    description,
    metadata,
    operator,
    phone,
    customer_email,
    customer_name,
    return_url,
    created,
    card,
    checkout_token,
    challenge_url,
    checkout_error,
    payment_link
  )
  select r.id,
    r.merchant_id,
    r.environment,
    r.status,
    r.currency,
    r.provider,
    r.provider_ref,
    r.failure_code,
    r.failure_message,
    r.version,
    r.completed,
    r.sent_at,
    r.window_ends_at,
    r.asked_at,
    r.asks,
    r.traceparent,
    r.method,
    r.amount,
    r.amount_charged,
    r.amount_net,
    r.fee,
    r.fee_bearer,
    r.amount_refunded,
    r.reference,
    r.description,
    r.metadata,
    r.operator,
    r.phone,
    r.customer_email,
    r.customer_name,
    r.return_url,
    r.created,
    r.card,
    r.checkout_token,
    r.challenge_url,
    r.checkout_error,
    r.payment_link
  from x
  cross join lateral json_populate_record(null::payments, x.patch) r
  where exists (
    select 1
    from k
    where k.merchant_id = x.merchant_id
      and k.environment = x.environment
      and k.key = x.key
  )
  order by r.merchant_id, r.environment, r.reference
  returning id, null::text as from_status, status as to_status, 'created' as reason
),
h as (
  insert into payment_status_changes (payment_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
)
select id
from m;

-- card_payment.sql.change: change-card_payment
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    from_status text,
    from_version int,
    unsent boolean,
    patch json,
    to_status text,
    reason text,
    callback_id uuid
  )
),
m as (
  update payments o
  set (
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    method,
    amount,
    amount_charged,
    amount_net,
    fee,
    fee_bearer,
    amount_refunded,
    reference,
    description,
    metadata,
    operator,
    phone,
    customer_email,
    customer_name,
    return_url,
    created,
    card,
    checkout_token,
    challenge_url,
    checkout_error,
    payment_link,
    updated_at
  ) = (
    select r.merchant_id,
      r.environment,
      r.status,
      r.currency,
      r.provider,
      r.provider_ref,
      r.failure_code,
      r.failure_message,
      r.version,
      r.completed,
      r.sent_at,
      r.window_ends_at,
      r.asked_at,
      r.asks,
      r.traceparent,
      r.method,
      r.amount,
      r.amount_charged,
      r.amount_net,
      r.fee,
      r.fee_bearer,
      r.amount_refunded,
      r.reference,
      r.description,
      r.metadata,
      r.operator,
      r.phone,
      r.customer_email,
      r.customer_name,
      r.return_url,
      r.created,
      r.card,
      r.checkout_token,
      r.challenge_url,
      r.checkout_error,
      r.payment_link,
      r.updated_at
    from json_populate_record(o, x.patch) r
  )
  from x
  where o.id = any(array(select id from x))
    and o.id = x.id
    and o.status = x.from_status
    and o.version = x.from_version
    and (o.sent_at is null or x.unsent is not true)
    and not exists (
      select 1
      from provider_callbacks pc
      where pc.id = x.callback_id
        and pc.processed_at is not null
    )
    and o.method = 'card'
  returning o.id, x.from_status, x.to_status, x.reason, x.callback_id
),
h as (
  insert into payment_status_changes (payment_id, from_status, to_status, reason, at)
  select id, from_status, to_status, reason, clock_timestamp()
  from m
  where to_status is not null
),
ob as (
  insert into outbox (id, queue, job_name, payload, delay_ms, traceparent)
  select id, queue, job_name, payload, delay_ms, traceparent
  from (
    select x.*
    from json_to_recordset($2::json) as x(
      object_id text,
      id uuid,
      queue text,
      job_name text,
      payload jsonb,
      delay_ms int,
      traceparent text
    )
    join m on m.id = x.object_id
  ) o
),
ev as (
  select v.*
  from json_to_recordset($3::json) as v(
    object_id text,
    id text,
    merchant_id text,
    environment text,
    type text,
    object_version int,
    created bigint,
    body text
  )
  join m on m.id = v.object_id
),
e as (
  insert into events (
    id, merchant_id, environment, type, object_id, object_version, created, body
  )
  select id, merchant_id, environment, type, object_id, object_version, created, body::jsonb
  from ev
),
d as (
  insert into webhook_deliveries (id, event_id, webhook_id, created, redelivery)
  select x.id, ev.id, x.webhook_id, ev.created, 0
  from json_to_recordset($4::json) as x(object_id text, id text, webhook_id text)
  join ev on ev.object_id = x.object_id
),
lt as (
  insert into ledger_transactions (id, kind, reference_id, environment, currency, merchant_id)
  select x.id, x.kind, x.reference_id, x.environment, x.currency, x.merchant_id
  from json_to_recordset($5::json) as x(
    object_id text,
    id uuid,
    kind text,
    reference_id text,
    environment text,
    currency text,
    merchant_id text
  )
  join m on m.id = x.object_id
  on conflict (kind, reference_id) do nothing
  returning id
),
le as (
  insert into ledger_entries (transaction_id, account_id, amount, unfolded)
  select lt.id, x.account_id, x.amount, x.unfolded
  from json_to_recordset($6::json) as x(
    transaction_id uuid, account_id bigint, amount bigint, unfolded boolean
  )
  join lt on lt.id = x.transaction_id
),
c as (
  update provider_callbacks pc
  set processed_at = now(), outcome = 'applied'
  from m
  where pc.id = m.callback_id
    and pc.processed_at is null
)
select id
from m;

-- card_payment.sql.changeRow: change-row-card_payment
with x as materialized (
  select *
  from json_to_recordset($1::json) as x(
    id text,
    from_status text,
    from_version int,
    unsent boolean,
    patch json,
    to_status text,
    reason text,
    callback_id uuid
  )
),
m as (
  update payments o
  set (
    merchant_id,
    environment,
    status,
    currency,
    provider,
    provider_ref,
    failure_code,
    failure_message,
    version,
    completed,
    sent_at,
    window_ends_at,
    asked_at,
    asks,
    traceparent,
    method,
    amount,
    amount_charged,
    amount_net,
    fee,
    fee_bearer,
    amount_refunded,
    reference,
    description,
    metadata,
    operator,
    phone,
    customer_email,
    customer_name,
    return_url,
    created,
    card,
    checkout_token,
    challenge_url,
    checkout_error,
    payment_link,
    updated_at
  ) = (
    select r.merchant_id,
      r.environment,
      r.status,
      r.currency,
      r.provider,
      r.provider_ref,
      r.failure_code,
      r.failure_message,
      r.version,
      r.completed,
      r.sent_at,
      r.window_ends_at,
      r.asked_at,
      r.asks,
      r.traceparent,
      r.method,
      r.amount,
      r.amount_charged,
      r.amount_net,
      r.fee,
      r.fee_bearer,
      r.amount_refunded,
      r.reference,
      r.description,
      r.metadata,
      r.operator,
      r.phone,
      r.customer_email,
      r.customer_name,
      r.return_url,
      r.created,
      r.card,
      r.checkout_token,
      r.challenge_url,
      r.checkout_error,
      r.payment_link,
      r.updated_at
    from json_populate_record(o, x.patch) r
  )
  from x
  where o.id = any(array(select id from x))
    and o.id = x.id
    and o.status = x.from_status
    and o.version = x.from_version
    and (o.sent_at is null or x.unsent is not true)
    and not exists (
      select 1
      from provider_callbacks pc
      where pc.id = x.callback_id
        and pc.processed_at is not null
    )
    and o.method = 'card'
  returning o.id, x.from_status, x.to_status, x.reason, x.callback_id
)
select id
from m;

-- card_payment.sql.mark: mark-callbacks-card_payment
with x as materialized (
  select *
  from jsonb_to_recordset($1::jsonb) as x(
    callback_id uuid, outcome text, id text, from_status text, from_version int
  )
)
update provider_callbacks pc
set processed_at = now(), outcome = x.outcome
from x
where pc.id = any(array(select callback_id from x))
  and pc.id = x.callback_id
  and pc.processed_at is null
  and exists (
    select 1
    from payments o
    where o.id = x.id
      and o.status = x.from_status
      and o.version = x.from_version
      and o.method = 'card'
  )
returning pc.id;
