import { defineRoutes, route, type RouteSpec } from '../routeTable';
import { apiDocument } from '../openapi/document';

/**
 * GET /v1/openapi.json, with this service's BASE_URL as its server, built once per process.
 * `routes` is read when first asked: it is the table that lists this group.
 */
export const referenceRoutes = (routes: () => readonly RouteSpec[]) =>
  defineRoutes([
    route({
      method: 'GET',
      path: '/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'This document',
      description: 'The OpenAPI 3.1 document of every merchant route (also rendered at `/docs`).',
      tag: 'Reference',
      scope: 'none',
      responses: { 200: { description: 'The OpenAPI document', body: { type: 'object', description: 'OpenAPI 3.1' } } },
      async handler(ctx) {
        const { caches, config } = ctx.services;
        ctx.set('Cache-Control', 'public, max-age=300');
        ctx.type = 'application/json';
        ctx.body = await caches
          .ttl<string>('openapi-document', Infinity, 1)
          .get(config.baseUrl, async () => JSON.stringify(apiDocument(routes(), config.baseUrl)));
      },
    }),
  ]);
