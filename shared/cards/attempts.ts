import type { Executor } from '../db/knex';
import type { BrowserInfo } from '../providers/cardConnector';

/**
 * A card payment's checkout attempts (the `card_attempts` table): how many payment sources its
 * page has posted, the last one, the payer's browser, and a gateway's 3-D Secure challenge HTML.
 * A gateway names its transactions by the attempt (auth-{n}, pay-{n}), so a charge repeated after
 * a crash or a timeout reuses the ids of its attempt, and a new source gets new ones.
 */
export interface CardAttempt {
  payment_id: string;
  attempt: number;
  /** the last payment source posted (a vault token, a gateway session id) */
  source: string;
  browser: BrowserInfo | null;
  challenge_html: string | null;
}

export async function lastAttempt(db: Executor, paymentId: string): Promise<CardAttempt | undefined> {
  return db('card_attempts').where({ payment_id: paymentId }).first() as Promise<CardAttempt | undefined>;
}

/** Counts one more posted source (under the payment's row lock: POST /checkout/{id}/pay). */
export async function recordAttempt(
  db: Executor,
  paymentId: string,
  source: string,
  browser: BrowserInfo | null,
): Promise<number> {
  const [row] = (
    await db.raw(
      `insert into card_attempts (payment_id, attempt, source, browser, challenge_html)
     values (?, 1, ?, ?::jsonb, null)
     on conflict (payment_id) do update
       set attempt = card_attempts.attempt + 1, source = excluded.source, browser = excluded.browser,
           challenge_html = null, updated_at = now()
     returning attempt`,
      [paymentId, source, browser === null ? null : JSON.stringify(browser)],
    )
  ).rows as { attempt: number }[];
  return row.attempt;
}
