import type { Executor } from '../db/knex';
import { transact, type TransactDeps } from '../db/transact';
import { isId } from '../ids';
import { Conflict, NotFound } from '../errors';
import { lockRow, writeColumns } from '../operations/transition';
import { QUEUES } from '../queues/names';
import { cardPaymentKind } from './kind';
import type { PaymentRow } from '../db/rows';
import type { BrowserInfo } from '../providers/cardConnector';
import { recordAttempt } from './attempts';

/**
 * What the hosted checkout (api/checkout) does with a card payment, apart from rendering it.
 * The outcome of 3-D Secure is asked of the acquirer, never taken from the browser.
 */

export type CheckoutPayment = PaymentRow & { merchant_name: string };

/** The card payment with this id, whoever its merchant (the unguessable id is the client's only key). */
export async function findCheckout(db: Executor, id: string): Promise<CheckoutPayment | undefined> {
  if (!isId('payment', id)) return undefined;
  return db('payments as p')
    .join('merchants as m', 'm.id', 'p.merchant_id')
    .where({ 'p.id': id, 'p.method': 'card' })
    .first('p.*', 'm.name as merchant_name');
}

/** The charge of this payment is under way: a payment source waits for the job, or the acquirer has answered. */
export const charging = (p: PaymentRow) => p.status === 'pending' && (p.checkout_token !== null || p.sent_at !== null);

/**
 * POST /checkout/{id}/pay: stores the payment source (a vault token, a gateway session id: opaque
 * here) with the charge job under the row lock; 409 once not payable, or while a source is charged.
 */
export async function acceptSource(
  deps: TransactDeps,
  id: string,
  source: string,
  now: number,
  requestId?: string,
  browser: BrowserInfo | null = null,
): Promise<void> {
  await transact(deps, async (trx, outbox) => {
    const p = await lockRow(trx, cardPaymentKind, id);
    if (!p) throw new NotFound('Payment');
    if (p.status !== 'pending' || p.window_ends_at.getTime() <= now)
      throw new Conflict(
        'payment-not-pending',
        `This payment is ${p.status === 'pending' ? 'expired' : p.status}: it can no longer be paid`,
      );
    if (charging(p)) throw new Conflict('payment-in-progress', 'A card is already being charged for this payment');
    await writeColumns(trx, cardPaymentKind, [
      {
        row: p,
        patch: { checkout_token: source, checkout_error: null, updated_at: new Date(now) } as Partial<PaymentRow>,
      },
    ]);
    await recordAttempt(trx, id, source, browser);
    await outbox.add(QUEUES.cardCharge, 'charge', { paymentId: id, requestId });
  });
}

/**
 * The client's frame came back from the issuer's challenge (false when the payment never had
 * one): its window is brought forward so the card-charge sweep asks the acquirer at its next
 * pass, unless the acquirer's callback decides first. The browser's word changes nothing else.
 */
export async function challengeReturned(db: Executor, p: CheckoutPayment, now: number): Promise<boolean> {
  if (p.challenge_url === null) return false;
  // a row that has moved on from the challenge needs no ask brought forward
  if (p.status === 'processing' && p.window_ends_at.getTime() > now)
    await writeColumns(db, cardPaymentKind, [{ row: p, patch: { window_ends_at: new Date(now) } }]);
  return true;
}
