import type { Operator } from '../vocabulary';
import { defineKind, type OperationKind } from '../operations/kind';
import { payoutMachine } from '../operations/kindMachines';
import { moneyOutPolicy } from '../operations/moneyOut';
import { QUEUES } from '../queues/names';
import { Payout, PayoutStatusChange } from '../db/models';
import { payoutView } from './view';
import { PAYOUT_COLUMNS, type PayoutRow } from '../db/rows';
import type { PayoutStatus } from '../vocabulary';

/** A payout (B2C) as a kind of the operations kernel: sent by the payout pool, `processing` once the provider accepts it. */
export const payoutKind: OperationKind<PayoutRow, PayoutStatus> = defineKind<PayoutRow, PayoutStatus>(
  {
    name: 'payout',
    model: Payout,
    history: PayoutStatusChange,
    machine: payoutMachine,
    send: { queue: QUEUES.payout, job: 'send-payout', idField: 'payoutId' },
    providerRefVisible: false,
    sendable: () => true,
    request: (provider, p) =>
      provider.payout({
        payoutId: p.id,
        operator: p.operator as Operator,
        amount: p.amount,
        currency: p.currency,
        msisdn: p.phone,
        description: p.description,
      }),
    moved: (p) => ({ amount: p.amount, currency: p.currency }),
    ...moneyOutPolicy<PayoutRow>('payout'),
    eventObject: payoutView,
  },
  PAYOUT_COLUMNS,
  ['merchant_id', 'environment', 'reference'],
);
