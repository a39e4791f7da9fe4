import Router from '@koa/router';
import type { Context } from 'koa';
import { validator } from '../shared/validation';
import type { MerchantErrorCode } from './openapi/errors';

/**
 * The merchant API's route table: each route is declared once, next to its handler, with the
 * ajv schemas that validate its body and query and the objects it answers. The same
 * declaration registers the koa route and feeds the OpenAPI document (api/openapi), so the
 * document says exactly what the route validates (the contract tests check the rest).
 */

/** A JSON Schema (2020-12, the dialect of OpenAPI 3.1) written as a plain object. */
export type JsonSchema = { readonly [k: string]: unknown };

/** A schema shown in the document under its name (components/schemas), referenced where used. */
export interface Component {
  readonly component: string;
  readonly schema: JsonSchema;
}

export const component = (name: string, schema: JsonSchema): Component => ({ component: name, schema });

/** An object of exactly these properties, every one required (in their order) but those named `optional`. */
export const closedObject = (
  properties: Record<string, JsonSchema | Component>,
  optional: string[] = [],
): JsonSchema => ({
  type: 'object',
  additionalProperties: false,
  required: Object.keys(properties).filter((k) => !optional.includes(k)),
  properties,
});

export interface ResponseSpec {
  description: string;
  /** The JSON body (a component or an inline schema); with `contentType`, the body of that type. */
  body?: Component | JsonSchema;
  /** Default `application/json`. */
  contentType?: string;
}

export interface RouteSpec<B = unknown, Q = unknown> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path as the router writes it, relative to its prefix (`/payments/:id`). */
  path: string;
  /** Unique, stable: the SDK's and the generated types' name for the operation. */
  operationId: string;
  summary: string;
  description?: string;
  /** The group the reference page lists it under (`Payments`, `Events`...). */
  tag: string;
  /** The least scope a route needs (docs/decisions.md#merchant-pipeline); `none` for the routes that take no key. */
  scope: 'none' | 'read' | 'payments' | 'full';
  /** Path parameters by name (every `:name` of the path). */
  params?: Record<string, { description: string }>;
  /** ajv object schema of the query string; its properties are the documented query parameters. */
  query?: JsonSchema;
  /** ajv schema of the JSON body (POST/PUT/PATCH); validated before the handler runs. */
  body?: Component | JsonSchema;
  /** Idempotency-Key header (docs/decisions.md#merchant-pipeline): required, optional, or not taken. */
  idempotencyKey?: 'required' | 'optional';
  /** Successful answers by status. */
  responses: Record<number, ResponseSpec>;
  /** Error codes this route answers beyond those of every merchant request (api/openapi/errors.ts). */
  errors?: readonly MerchantErrorCode[];
  /** Runs after the body and query were validated; sets ctx.body / ctx.status. */
  handler: (ctx: Context, input: { body: B; query: Q }) => Promise<void> | void;
}

/** A group of routes: the koa router that serves them and their declarations. */
export interface RouteGroup {
  readonly router: Router;
  readonly routes: readonly RouteSpec[];
}

/** Typed declaration of one route: `B` and `Q` are what its body and query schemas accept. */
export function route<B = Record<string, never>, Q = Record<string, never>>(spec: RouteSpec<B, Q>): RouteSpec {
  return spec as unknown as RouteSpec;
}

export function isComponent(x: unknown): x is Component {
  if (!x || typeof x !== 'object') return false;
  const o = x as Record<string, unknown>;
  return typeof o.component === 'string' && typeof o.schema === 'object' && Object.keys(o).length === 2;
}

/** Registers each route on a new router: body and query validated by the schemas the document shows, then the handler. */
export function defineRoutes(routes: RouteSpec[]): RouteGroup {
  const router = new Router();
  for (const spec of routes) {
    const body = spec.body ? validator(isComponent(spec.body) ? spec.body.schema : spec.body) : null;
    const query = spec.query ? validator(spec.query) : null;
    router.register(spec.path, [spec.method], async (ctx: Context) => {
      // the pipeline has parsed the JSON body (an empty one reads as {})
      await spec.handler(ctx, { body: body?.(ctx.state.body), query: query?.({ ...ctx.query }) });
    });
  }
  return { router, routes };
}

/** The OpenAPI form of a router path: `/payments/:id` → `/payments/{id}`. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
