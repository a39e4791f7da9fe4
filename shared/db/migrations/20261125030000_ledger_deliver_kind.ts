import type { Knex } from 'knex';

/**
 * "settle" names the daily settlement only: the posting that sends a refund's or payout's money
 * on to the provider once it confirms (in_transit -> provider_clearing, the fee to the platform)
 * is the `*_deliver` posting, as the operations' state machine calls that effect.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `update ledger_transactions set kind = replace(kind, '_settle', '_deliver') where kind in ('refund_settle', 'payout_settle')`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    `update ledger_transactions set kind = replace(kind, '_deliver', '_settle') where kind in ('refund_deliver', 'payout_deliver')`,
  );
}
