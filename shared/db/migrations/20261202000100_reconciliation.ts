import type { Knex } from 'knex';

/**
 * Daily reconciliation (docs/reconciliation.md): the providers' statements as they came, the runs
 * that match them with our operations, the items each run found, and the providers' wallet
 * balances read beside the ledger's.
 *
 * - `provider_statements`: one import (the pawaPay statements API, or a report file uploaded by
 *   an operator). `provider_statement_id` is pawaPay's statementId, or the SHA-256 of an uploaded
 *   file: loading the same statement twice finds it and changes nothing.
 * - `statement_lines`: each line's raw columns (jsonb, as the provider wrote them) beside the
 *   normalised fields. A transaction is one line per connector and kind (`line_key`: our id, else
 *   the provider's reference, else the hash of the raw line), so an overlapping statement adds
 *   only what is new.
 * - `reconciliation_runs`: one per connector and business day; a run again replaces its items.
 * - `reconciliation_items`: exactly one per pair (a line with our operation, a line without one,
 *   or an operation without a line).
 * - `provider_balance_readings`: a provider's wallet balance (API or a statement's closing
 *   balance) with the ledger's expected balance and the difference.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table provider_statements (
      id text primary key,
      connector text not null,
      source text not null check (source in ('api', 'upload')),
      format text not null,
      provider_statement_id text not null,
      period_start timestamptz not null,
      period_end timestamptz not null,
      currency text,
      closing_balance bigint,
      status text not null check (status in ('requested', 'loaded', 'failed')),
      failure text,
      lines integer not null default 0,
      created_at timestamptz not null default now(),
      loaded_at timestamptz,
      unique (connector, provider_statement_id)
    )`);
  await knex.raw(`
    create table statement_lines (
      id bigserial primary key,
      statement_id text not null references provider_statements (id),
      connector text not null,
      line_no integer not null,
      raw jsonb not null,
      our_id text,
      provider_ref text,
      kind text not null check (kind in ('collection', 'payout', 'refund', 'reversal', 'fee', 'other')),
      status text not null check (status in ('completed', 'failed', 'pending')),
      amount bigint not null,
      currency text not null,
      fee bigint not null default 0,
      occurred_at timestamptz not null,
      business_day date not null,
      line_key text not null,
      unique (connector, kind, line_key)
    )`);
  await knex.raw(`create index statement_lines_day_idx on statement_lines (connector, business_day, id)`);
  await knex.raw(`create index statement_lines_our_id_idx on statement_lines (our_id) where our_id is not null`);
  await knex.raw(
    `create index statement_lines_ref_idx on statement_lines (connector, provider_ref) where provider_ref is not null`,
  );
  await knex.raw(`
    create table reconciliation_runs (
      id text primary key,
      connector text not null,
      business_day date not null,
      status text not null check (status in ('running', 'done', 'failed')),
      counts jsonb not null default '{}',
      provider_fees jsonb not null default '{}',
      balances jsonb not null default '[]',
      balance_flagged boolean not null default false,
      failure text,
      started_at timestamptz not null default now(),
      finished_at timestamptz,
      unique (connector, business_day)
    )`);
  await knex.raw(`
    create table reconciliation_items (
      id bigserial primary key,
      run_id text not null references reconciliation_runs (id) on delete cascade,
      category text not null check (category in
        ('matched', 'amount-mismatch', 'status-mismatch', 'missing-here', 'missing-there', 'reversed')),
      line_id bigint references statement_lines (id),
      object_kind text,
      object_id text,
      details jsonb not null default '{}',
      resolved_at timestamptz,
      created_at timestamptz not null default now()
    )`);
  await knex.raw(`create index reconciliation_items_run_idx on reconciliation_items (run_id, category, id)`);
  await knex.raw(
    `create index reconciliation_items_open_idx on reconciliation_items (created_at) where category <> 'matched' and resolved_at is null`,
  );
  await knex.raw(`
    create table provider_balance_readings (
      id bigserial primary key,
      connector text not null,
      currency text not null,
      source text not null check (source in ('api', 'statement')),
      business_day date not null,
      reported bigint not null,
      expected bigint not null,
      difference bigint not null,
      flagged boolean not null,
      read_at timestamptz not null,
      unique (connector, currency, source, business_day)
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table if exists provider_balance_readings');
  await knex.raw('drop table if exists reconciliation_items');
  await knex.raw('drop table if exists reconciliation_runs');
  await knex.raw('drop table if exists statement_lines');
  await knex.raw('drop table if exists provider_statements');
}
