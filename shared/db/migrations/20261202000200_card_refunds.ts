import type { Knex } from 'knex';

/**
 * Operator refunds of card payments (docs/decisions.md#operator-admin-api): a card refund goes back
 * to the card through the payment's card connector, so it has no operator and no phone. Both stay
 * required together for a mobile-money refund (the phone that paid): null together, or set together.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table refunds alter column operator drop not null, alter column phone drop not null`);
  await knex.raw(
    `alter table refunds add constraint refunds_destination_check check ((operator is null) = (phone is null))`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`alter table refunds drop constraint refunds_destination_check`);
  await knex.raw(`alter table refunds alter column operator set not null, alter column phone set not null`);
}
