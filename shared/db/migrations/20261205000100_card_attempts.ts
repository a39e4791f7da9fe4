import type { Knex } from 'knex';

/**
 * A card payment's checkout attempts (docs/decisions.md#cards-hosted-checkout): one row per card
 * payment once its page posted a payment source. `attempt` counts the sources posted (a gateway
 * names its transactions by it: auth-{n}, pay-{n}, so a retry of one attempt reuses its ids);
 * `source` is the last one (a gateway session id: PAY after a 3-D Secure challenge names it
 * again; never a card number); `browser` what the page read of the payer's browser for EMV 3-D
 * Secure; `challenge_html` the gateway's 3-D Secure redirect HTML, served by the checkout at
 * /checkout/{id}/3ds-challenge on its own origin while the challenge is under way.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create table card_attempts (
    payment_id text primary key,
    attempt integer not null check (attempt >= 1),
    source text not null,
    browser jsonb,
    challenge_html text,
    updated_at timestamptz not null default now()
  )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`drop table card_attempts`);
}
