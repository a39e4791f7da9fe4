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
    '`delayed`: recent pushes time out or fail beyond a threshold (creations still accepted); `closed`: set by the operator, creations get 422 `operator-unavailable`',
};

/** One operator's availability per direction (docs/decisions.md#integrators-kit). */
export const OperatorAvailability = component(
  'OperatorAvailability',
  closedObject({
    operator: { type: 'string', enum: OPERATORS },
    collection: { ...STATUS, description: `Payments. ${STATUS.description}` },
    payout: { ...STATUS, description: 'Payouts' },
    refund: { ...STATUS, description: 'Refunds' },
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
      "Per operator and direction (collection, payout, refund) in the key's environment: `operational`, `delayed` (computed from recent provider outcomes and latency) or `closed` (an operator closure, e.g. a provider's maintenance).",
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
