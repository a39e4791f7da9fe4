import { defineKind, type OperationKind } from '../operations/kind';
import { cardPaymentMachine } from '../operations/machines';
import { collectionPolicy } from '../payments/kind';
import { Payment, PaymentStatusChange } from '../db/models';
import { QUEUES } from '../queues/names';
import { SourceRefused, type CardConnector, type ChargeAnswer } from '../providers/cardConnector';
import { PAYMENT_COLUMNS, type PaymentRow } from '../db/rows';
import type { CardPaymentStatus } from '../vocabulary';

/** A card payment not paid within 30 minutes of its creation is cancelled (docs/decisions.md#cards-hosted-checkout). */
export const CARD_CHECKOUT_WINDOW_MS = 30 * 60 * 1000;

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
    request: (connector, p) =>
      connector.charge({
        paymentId: p.id,
        source: p.checkout_token!,
        amount: p.amount_charged,
        currency: p.currency,
        description: p.description,
      }),
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
      return { trigger: 'sent', patch: charged };
    },
    correctable: (_p, err) =>
      err instanceof SourceRefused ? { checkout_token: null, checkout_error: err.code } : null,
    ...collectionPolicy,
  },
  PAYMENT_COLUMNS,
  ['merchant_id', 'environment', 'reference'],
);
