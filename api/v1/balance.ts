import { callerOf } from './caller';
import { closedObject, component, defineRoutes, route } from '../routeTable';
import { CURRENCY, ENVIRONMENT, MINOR_UNITS } from '../openapi/schemas';
import { balanceOf } from '../../shared/ledger/balance';
import { exactJson } from '../../shared/money';

const AMOUNTS = { type: 'array', items: closedObject({ currency: CURRENCY, amount: MINOR_UNITS }) };

/** The balance object (docs/decisions.md#balance-and-settlement). */
export const Balance = component(
  'Balance',
  closedObject({
    object: { const: 'balance' },
    environment: ENVIRONMENT,
    available: {
      ...AMOUNTS,
      description: 'Per currency: what refunds and payouts may take, and what the next settlement pays',
    },
    pending: {
      ...AMOUNTS,
      description:
        "Per currency: refunds and payouts in transit, the amount (plus a payout's fee) that each took from `available` when it was created and that is with the provider until its outcome: it leaves for good when the provider confirms and returns to `available` if the refund or payout fails. Incoming payments never pass here: a succeeded payment's net amount is credited to `available` at once",
    },
  }),
);

/** GET /v1/balance (scope read): the balance of the key's merchant in the key's environment, exact at any size. */
export const balanceRoutes = defineRoutes([
  route({
    method: 'GET',
    path: '/balance',
    operationId: 'getBalance',
    summary: 'Retrieve the balance',
    description: "The balance of the key's merchant in the key's environment, from the double-entry ledger.",
    tag: 'Balance and settlements',
    scope: 'read',
    responses: { 200: { description: 'The balance', body: Balance } },
    async handler(ctx) {
      const { merchantId, environment } = callerOf(ctx);
      ctx.type = 'application/json';
      ctx.body = exactJson(await balanceOf(ctx.services.db, merchantId, environment));
    },
  }),
]);
