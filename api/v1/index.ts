import Router from '@koa/router';
import type { RouteGroup, RouteSpec } from '../routeTable';
import { availabilityRoutes } from './availability';
import { balanceRoutes } from './balance';
import { eventsRoutes } from './events';
import { paymentsRoutes } from './payments';
import { paymentLinksRoutes } from './paymentLinks';
import { payoutsRoutes } from './payouts';
import { phoneNumbersRoutes } from './phoneNumbers';
import { refundsRoutes } from './refunds';
import { reportsRoutes } from './reports';
import { settlementsRoutes } from './settlements';
import { referenceRoutes } from './reference';
import { apiDocument, type OpenApiDocument } from '../openapi/document';

/**
 * The merchant API under /v1, every group of the route table. V1_PUBLIC is answered before the
 * merchant pipeline (no key); V1_GROUPS pass it first.
 */
export const V1_PUBLIC: RouteGroup[] = [referenceRoutes(() => V1_ROUTES)];
export const V1_GROUPS: RouteGroup[] = [
  balanceRoutes,
  paymentsRoutes,
  paymentLinksRoutes,
  refundsRoutes,
  payoutsRoutes,
  eventsRoutes,
  settlementsRoutes,
  phoneNumbersRoutes,
  availabilityRoutes,
  reportsRoutes,
];

/** Every /v1 route, in the order the document lists them. */
export const V1_ROUTES: readonly RouteSpec[] = [...V1_GROUPS, ...V1_PUBLIC].flatMap((g) => g.routes);

/** The OpenAPI document of the merchant API, as committed and as the SDK types come from (no server). */
export const v1Document = (): OpenApiDocument => apiDocument(V1_ROUTES);

function mount(groups: RouteGroup[]): Router {
  const router = new Router({ prefix: '/v1' });
  router.use(...groups.map((g) => g.router.routes()));
  return router;
}

export const v1PublicRouter = mount(V1_PUBLIC);
export const v1Router = mount(V1_GROUPS);
