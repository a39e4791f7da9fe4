import { callerOf } from './caller';
import { closedObject, component, defineRoutes, route } from '../routeTable';
import { refuseQuery } from '../query';
import { cardAvailability, operatorAvailability } from '../../shared/availability/read';
import { OPERATORS } from '../../shared/vocabulary';

const STATUS = {
  type: 'string',
  enum: ['operational', 'delayed', 'closed'],
  description:
    '`delayed`: recent pushes time out or fail beyond a threshold (creations still accepted); `closed`: set by the operator, creations get 422 `operator-unavailable`',
};

/** One operator's availability per direction (docs/decisions.md "Integrator's kit"). */
export const OperatorAvailability = component(
  'OperatorAvailability',
  closedObject({
    operator: { type: 'string', enum: OPERATORS },
    collection: { ...STATUS, description: `Payments. ${STATUS.description}` },
    payout: { ...STATUS, description: 'Payouts' },
    refund: { ...STATUS, description: 'Refunds' },
  }),
);

/** Card payments' availability (docs/decisions.md "Cards (hosted checkout)"): whether a card connector serves the key's environment. */
export const CardAvailability = component(
  'CardAvailability',
  closedObject({
    collection: {
      type: 'string',
      enum: ['operational', 'closed'],
      description:
        'Card payments. `closed`: no card connector is routed for live keys, and live card payments get 422 `method-unavailable`; test keys always reach the card sandbox (`operational`)',
    },
  }),
);

const AvailabilityList = component(
  'AvailabilityList',
  closedObject({
    object: { const: 'list' },
    data: { type: 'array', items: OperatorAvailability },
    card: CardAvailability,
  }),
);

/** Operator and card availability of the key's environment (docs/decisions.md "Integrator's kit"). */
export const availabilityRoutes = defineRoutes([
  route({
    method: 'GET',
    path: '/availability',
    operationId: 'getAvailability',
    summary: 'Operator and card availability',
    description:
      "Per operator and direction (collection, payout, refund) in the key's environment: `operational`, `delayed` (computed from recent provider outcomes and latency) or `closed` (an operator closure, e.g. a provider's maintenance). Beside the list, `card.collection` says whether card payments can be created with the key: `closed` in live while no card connector is routed (creations get 422 `method-unavailable`), `operational` otherwise.",
    tag: 'Operators',
    scope: 'read',
    responses: {
      200: { description: 'Every operator, and cards', body: AvailabilityList },
    },
    errors: ['validation-failed'],
    async handler(ctx) {
      refuseQuery(ctx.query);
      const { db, clock, config, providers } = ctx.services;
      const { environment } = callerOf(ctx);
      ctx.body = {
        object: 'list',
        data: await operatorAvailability(db, providers, environment, clock.now(), config.availability),
        card: cardAvailability(providers, environment),
      };
    },
  }),
]);
