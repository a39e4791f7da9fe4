import Router from '@koa/router';
import { callerOf } from './caller';
import { refuseQuery } from '../query';
import { operatorAvailability } from '../../shared/availability/read';

/** Operator availability of the key's environment (decisions.md "Integrator's kit"). */
export const availabilityRouter = new Router().get('/availability', async (ctx) => {
  refuseQuery(ctx.query);
  const { db, clock, config } = ctx.services;
  ctx.body = { object: 'list', data: await operatorAvailability(db, callerOf(ctx).environment, clock.now(), config.availability) };
});
