import type { Knex } from 'knex';

/**
 * Card payments (docs/decisions.md#cards-hosted-checkout): what the acquirer reported of the card (`card`: brand,
 * last4, exp_month, exp_year; never the number), the vault token the checkout posted and the
 * charge job will use once (`checkout_token`, cleared once charged or refused), the issuer's
 * challenge page while 3-D Secure is under way (`challenge_url`), and why the last token was
 * refused (`checkout_error`, shown by the checkout page; the payment stays payable).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `alter table payments add column card jsonb, add column checkout_token text, add column challenge_url text, add column checkout_error text`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    `alter table payments drop column card, drop column checkout_token, drop column challenge_url, drop column checkout_error`,
  );
}
