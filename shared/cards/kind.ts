import { defineKind, type OperationKind } from '../operations/kind';
import { cardPaymentMachine } from '../operations/kindMachines';
import { collectionPolicy } from '../payments/kind';
import { Payment, PaymentStatusChange } from '../db/models';
import { QUEUES } from '../queues/names';
import { SourceRefused, type CardConnector, type ChargeAnswer } from '../providers/cardConnector';
import { PAYMENT_COLUMNS, type PaymentRow } from '../db/rows';
import type { CardPaymentStatus } from '../vocabulary';
import { lastAttempt } from './attempts';

/** A card payment not paid within 30 minutes of its creation is cancelled (docs/decisions.md#cards-hosted-checkout). */
export const CARD_CHECKOUT_WINDOW_MS = 30 * 60 * 1000;
/** The longest 3-D Secure window CARD_3DS_WINDOW_MS allows: past both windows a challenge still pending is abandoned. */
const MAX_3DS_WINDOW_MS = 60 * 60 * 1000;

/**
 * The card charge as a kind of the operations kernel: a collection whose provider is a card
 * connector (shared/providers/cardConnector.ts), charged once per posted payment source (the
 * payment id is the idempotency key). Approved stays `pending` until its callback; 3-D Secure is
 * `processing`; declined is `failed`. A refused source changes nothing but `checkout_error`: the
 * client may try again.
 */
export const cardPaymentKind: OperationKind<PaymentRow, CardPaymentStatus, CardConnector> = defineKind<
  PaymentRow,
  CardPaymentStatus,
  CardConnector
>(
  {
    name: 'card_payment',
    idKind: 'payment',
    model: Payment,
    scope: { method: 'card' },
    history: PaymentStatusChange,
    machine: cardPaymentMachine,
    send: { queue: QUEUES.cardCharge, job: 'charge', idField: 'paymentId' },
    providerRefVisible: true,
    // charged only with a payment source the checkout posted (`checkout_token`), and never after the checkout window
    sendable: (p, now) => p.status === 'pending' && p.checkout_token !== null && p.window_ends_at.getTime() > now,
    // no source posted, none being charged, no charge answered: the acquirer cannot have charged it
    neverSent: (p) => p.status === 'pending' && p.checkout_token === null && p.sent_at === null,
    async request(connector, p, db) {
      const attempt = await lastAttempt(db, p.id);
      const answer = await connector.charge({
        paymentId: p.id,
        source: p.checkout_token!,
        amount: p.amount_charged,
        currency: p.currency,
        description: p.description,
        attempt: attempt?.attempt ?? 1,
        ...(attempt?.browser ? { browser: attempt.browser } : {}),
      });
      // a gateway's challenge HTML, served by the checkout on its own origin (api/checkout: /checkout/{id}/3ds-challenge)
      if (answer.outcome === 'challenge' && answer.challenge?.html !== undefined)
        await db('card_attempts')
          .where({ payment_id: p.id })
          .update({ challenge_html: answer.challenge.html, updated_at: db.fn.now() });
      return answer;
    },
    // a gateway continues the last checkout attempt by its ids (after a 3-D Secure challenge: PAY with its session)
    async askContext(p, db, now) {
      const attempt = await lastAttempt(db, p.id);
      const open = p.status === 'pending' || p.status === 'processing';
      return {
        card: {
          attempt: attempt?.attempt ?? 1,
          session: open ? (attempt?.source ?? null) : null,
          amount: p.amount_charged,
          abandoned: now > p.created * 1000 + CARD_CHECKOUT_WINDOW_MS + MAX_3DS_WINDOW_MS,
        },
      };
    },
    accepted(_p, answer, { config, now }) {
      const a = answer as ChargeAnswer;
      const charged: Partial<PaymentRow> = { checkout_token: null, checkout_error: null, card: a.card };
      if (a.outcome === 'challenge') {
        // the client now has the 3-D Secure window (default 10 minutes) to answer the issuer
        return {
          trigger: 'start_3ds',
          details: { reason: '3ds-required' },
          patch: {
            ...charged,
            challenge_url: a.challenge?.url ?? null,
            window_ends_at: new Date(now + config.cards.threeDsWindowMs),
          },
        };
      }
      if (a.outcome === 'declined')
        return {
          trigger: 'fail',
          details: { reason: 'card-declined', failureCode: a.failureCode, failureMessage: a.failureMessage },
          patch: charged,
        };
      // the acquirer's own record that the money moved (a gateway's PAY answer): final now
      if (a.settled)
        return {
          trigger: 'succeed',
          details: { reason: 'provider-accepted', providerRef: a.providerRef },
          patch: charged,
        };
      return { trigger: 'sent', patch: charged };
    },
    // a challenge whose browser return never reaches us is asked about from CARD_3DS_FIRST_ASK_MS on, not only at
    // the window's end (the acquirer may have its outcome); the window's end alone cancels it
    askEarly: (config) => ({
      statuses: ['processing'],
      beforeEndMs: config.cards.threeDsWindowMs - config.cards.threeDsFirstAskMs,
    }),
    correctable: (_p, err) =>
      err instanceof SourceRefused ? { checkout_token: null, checkout_error: err.code } : null,
    ...collectionPolicy,
  },
  PAYMENT_COLUMNS,
  ['merchant_id', 'environment', 'reference'],
);
