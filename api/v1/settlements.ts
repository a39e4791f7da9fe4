import { callerOf } from './caller';
import { closedObject, component, defineRoutes, route } from '../routeTable';
import { CURRENCY, ENVIRONMENT, idOf, MINOR_UNITS, pageOf, UNIX_SECONDS } from '../openapi/schemas';
import {
  getSettlement,
  listSettlements,
  listSettlementsSchema,
  type ListSettlementsQuery,
} from '../../shared/settlements/read';
import { exactJson } from '../../shared/money';
import { listSettlementLines } from '../../shared/statements/settlementLines';

/** The settlement object (docs/decisions.md#balance-and-settlement; also `data.object` of settlement.completed). */
export const Settlement = component(
  'Settlement',
  closedObject({
    id: idOf('settlement'),
    object: { const: 'settlement' },
    currency: CURRENCY,
    environment: ENVIRONMENT,
    period_start: UNIX_SECONDS,
    period_end: UNIX_SECONDS,
    gross: { ...MINOR_UNITS, description: 'Payments credited' },
    fees: MINOR_UNITS,
    refunds: MINOR_UNITS,
    payouts: MINOR_UNITS,
    net: MINOR_UNITS,
    count: { type: 'integer', description: 'Ledger lines covered' },
    created: UNIX_SECONDS,
  }),
);

export const SettlementList = pageOf('SettlementList', Settlement);

/** One ledger line of a statement (docs/decisions.md#integrators-kit). */
export const SettlementTransaction = component(
  'SettlementTransaction',
  closedObject({
    id: {
      type: 'string',
      pattern: '^[0-9a-f-]{36}$',
      description: 'The ledger line (a UUID); the `id` column of the CSV export',
    },
    type: {
      type: 'string',
      enum: ['payment', 'refund', 'refund_reversal', 'payout', 'payout_reversal'],
      description: '`*_reversal`: a failed refund or payout given back',
    },
    source_id: { type: 'string', description: 'The payment (`pay_`), refund (`re_`) or payout (`po_`) it comes from' },
    amount: {
      ...MINOR_UNITS,
      description:
        "The object's amount, signed as it moved the balance: a payment's amount_charged, a refund or payout negative, a reversal positive",
    },
    fee: {
      ...MINOR_UNITS,
      description:
        '`amount - net`: the fee of a payment or payout (negative when a failed payout gives it back), 0 for refunds',
    },
    net: { ...MINOR_UNITS, description: 'What moved on `available`' },
    currency: CURRENCY,
    created: UNIX_SECONDS,
  }),
);

/** Daily settlement batches (docs/decisions.md#balance-and-settlement); scope `read` is the pipeline's. Figures are exact at any size. */
export const settlementsRoutes = defineRoutes([
  route({
    method: 'GET',
    path: '/settlements/:id',
    operationId: 'getSettlement',
    summary: 'Retrieve a settlement',
    tag: 'Balance and settlements',
    scope: 'read',
    params: { id: { description: 'The settlement id (`stl_…`)' } },
    responses: { 200: { description: 'The settlement', body: Settlement } },
    async handler(ctx) {
      ctx.type = 'application/json';
      ctx.body = exactJson(await getSettlement(ctx.services.db, callerOf(ctx), ctx.params.id));
    },
  }),
  route<never, ListSettlementsQuery>({
    method: 'GET',
    path: '/settlements/:id/transactions',
    operationId: 'listSettlementTransactions',
    summary: "List a settlement's transactions",
    description:
      'The ledger lines the batch covers (payments credited, refunds and payouts taken, failed ones given back), newest first, cursor-paginated; their `net` sums to the batch `net`.',
    tag: 'Balance and settlements',
    scope: 'read',
    params: { id: { description: 'The settlement id (`stl_…`)' } },
    query: listSettlementsSchema,
    responses: {
      200: { description: 'A page of ledger lines', body: pageOf('SettlementTransactionList', SettlementTransaction) },
    },
    errors: ['validation-failed', 'not-found'],
    async handler(ctx, { query }) {
      ctx.body = await listSettlementLines(ctx.services.db, callerOf(ctx), ctx.params.id, query);
    },
  }),
  route<never, ListSettlementsQuery>({
    method: 'GET',
    path: '/settlements',
    operationId: 'listSettlements',
    summary: 'List settlements',
    description: 'Daily batches per currency, newest first, cursor-paginated.',
    tag: 'Balance and settlements',
    scope: 'read',
    query: listSettlementsSchema,
    responses: { 200: { description: 'A page of settlements', body: SettlementList } },
    async handler(ctx, { query }) {
      ctx.type = 'application/json';
      ctx.body = exactJson(await listSettlements(ctx.services.db, callerOf(ctx), query));
    },
  }),
]);
