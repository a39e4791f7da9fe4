import { callerOf } from './caller';
import { closedObject, component, defineRoutes, route } from '../routeTable';
import { refuseQuery } from '../query';
import { cardAvailability, operatorAvailability } from '../../shared/availability/read';
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

/** Card payments' availability (docs/decisions.md#cards-hosted-checkout): whether a card connector serves the key's environment. */
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

/** Operator and card availability of the key's environment (docs/decisions.md#integrators-kit). */
export const availabilityRoutes = defineRoutes([
  route({
    method: 'GET',
    path: '/availability',
    operationId: 'getAvailability',
    summary: 'Operator and card availability',
    description:
      "Per operator and direction (collection, payout, refund) in the key's environment: `operational`, `delayed` (the provider says so, or recent provider calls failed or were slow) or `closed`. " +
      '`closed` refuses creations with 422 `operator-unavailable` when the service operator closed the direction or no provider serves it; ' +
      'when the provider itself reports it closed (kept up to 60 s), creations are answered 201 and then fail with `failure_code` `operator-unavailable`. ' +
      'Beside the list, `card.collection` says whether card payments can be created with the key: `closed` in live while no card connector is routed (creations get 422 `method-unavailable`), `operational` otherwise.',
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
