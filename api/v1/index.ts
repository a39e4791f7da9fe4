import Router from '@koa/router';
import { availabilityRouter } from './availability';
import { balanceRouter } from './balance';
import { eventsRouter } from './events';
import { paymentsRouter } from './payments';
import { payoutsRouter } from './payouts';
import { phoneNumbersRouter } from './phoneNumbers';
import { refundsRouter } from './refunds';
import { reportsRouter } from './reports';
import { settlementsRouter } from './settlements';

/**
 * The merchant API under /v1. Every request first passes the pipeline of spec 5.6
 * (api/pipeline), then reaches one of the resource routers mounted here.
 */
export const v1Router = new Router({ prefix: '/v1' });
v1Router.use(balanceRouter.routes(), paymentsRouter.routes(), refundsRouter.routes(), payoutsRouter.routes(), eventsRouter.routes(), settlementsRouter.routes(), phoneNumbersRouter.routes(), availabilityRouter.routes(), reportsRouter.routes());
