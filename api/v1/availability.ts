import { callerOf } from './caller';
import { closedObject, component, defineRoutes, route } from '../routeTable';
import { listOf } from '../openapi/schemas';
import { refuseQuery } from '../query';
import { operatorAvailability } from '../../shared/availability/read';
import { OPERATORS } from '../../shared/vocabulary';

const STATUS = {
  type: 'string',
  enum: ['operational', 'delayed', 'closed'],
  description:
    '`delayed`: the provider says so, or half or more of the recent provider calls failed or were slow (by default at least 3 calls in 5 minutes, slow from 5 s); creations are still accepted. ' +
    '`closed`, by its cause: closed by the service operator, or no provider serves this key environment: creations get 422 `operator-unavailable`; ' +
    'the provider itself reports it closed: creations are still answered 201, then fail with `failure_code` `operator-unavailable` when the provider refuses them. ' +
    "The provider's own word is kept up to 60 s, so it shows, and clears, up to a minute late.",
};

/** One operator's availability per direction (docs/decisions.md#integrators-kit). */
export const OperatorAvailability = component(
  'OperatorAvailability',
  closedObject({
    operator: { type: 'string', enum: OPERATORS },
    collection: { ...STATUS, description: `Payments. ${STATUS.description}` },
    payout: { ...STATUS, description: `Payouts. ${STATUS.description}` },
    refund: { ...STATUS, description: `Refunds. ${STATUS.description}` },
  }),
);

/** Operator availability of the key's environment (docs/decisions.md#integrators-kit). */
export const availabilityRoutes = defineRoutes([
  route({
    method: 'GET',
    path: '/availability',
    operationId: 'getAvailability',
    summary: 'Operator availability',
    description:
      "Per operator and direction (collection, payout, refund) in the key's environment: `operational`, `delayed` (the provider says so, or recent provider calls failed or were slow) or `closed`. " +
      '`closed` refuses creations with 422 `operator-unavailable` when the service operator closed the direction or no provider serves it; ' +
      'when the provider itself reports it closed (kept up to 60 s), creations are answered 201 and then fail with `failure_code` `operator-unavailable`.',
    tag: 'Operators',
    scope: 'read',
    responses: {
      200: { description: 'Every operator', body: listOf('OperatorAvailabilityList', OperatorAvailability) },
    },
    errors: ['validation-failed'],
    async handler(ctx) {
      refuseQuery(ctx.query);
      const { db, clock, config } = ctx.services;
      ctx.body = {
        object: 'list',
        data: await operatorAvailability(
          db,
          ctx.services.providers,
          callerOf(ctx).environment,
          clock.now(),
          config.availability,
        ),
      };
    },
  }),
]);
