import { isComponent, openApiPath, type JsonSchema, type RouteSpec } from '../routeTable';
import {
  ERROR_CODES,
  type MerchantErrorCode,
  IDEMPOTENCY_ERRORS,
  PIPELINE_ERRORS,
  PUBLIC_ERRORS,
  SIGNED_ERRORS,
} from './errors';
import { ErrorBody } from './schemas';
import { API_DESCRIPTION } from './description';
import { SIGNED_METHODS } from '../pipeline/request';

/**
 * The OpenAPI 3.1 document of the merchant API, built from the route table and the error
 * catalogue. Deterministic: shared/client/openapi.json is this document, committed.
 */

const PREFIX = '/v1';

/** Tags in the order the reference page lists them, with their introductions. */
const TAGS = [
  {
    name: 'Payments',
    description:
      "Collect money by mobile money (a push prompt on the client's phone) or card (a hosted checkout page).",
  },
  { name: 'Refunds', description: 'Give a succeeded mobile-money payment back, whole or in part.' },
  { name: 'Payouts', description: 'Send money from your balance to a mobile-money wallet.' },
  { name: 'Balance and settlements', description: 'Your balance per currency and the daily settlement batches.' },
  {
    name: 'Events',
    description: 'Everything sent to your webhooks: read back what was missed, see each delivery, send an event again.',
  },
  { name: 'Operators', description: 'Which operators and directions are working now.' },
  { name: 'Phone numbers', description: 'What a client typed, as the `phone` to send and its operator.' },
  { name: 'Reference', description: 'This document.' },
];

export interface OpenApiDocument {
  openapi: string;
  info: Record<string, unknown>;
  servers: { url: string; description?: string; variables?: Record<string, unknown> }[];
  tags: { name: string; description?: string }[];
  paths: Record<string, Record<string, any>>;
  components: {
    schemas: Record<string, JsonSchema>;
    securitySchemes: Record<string, unknown>;
    parameters: Record<string, unknown>;
    headers: Record<string, unknown>;
  };
  security: Record<string, string[]>[];
}

/** Replaces every component inside a schema by a $ref, collecting its schema once under its name. */
function refs(schema: unknown, into: Map<string, JsonSchema>): unknown {
  if (isComponent(schema)) {
    if (!into.has(schema.component)) {
      into.set(schema.component, {}); // placeholder first: a component may refer to itself
      into.set(schema.component, refs(schema.schema, into) as JsonSchema);
    }
    return { $ref: `#/components/schemas/${schema.component}` };
  }
  if (Array.isArray(schema)) return schema.map((s) => refs(s, into));
  if (schema && typeof schema === 'object')
    return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, refs(v, into)]));
  return schema;
}

/** The codes a route may answer, by status: the pipeline's, its method's, its own. */
export function errorCodesOf(route: RouteSpec): Map<number, MerchantErrorCode[]> {
  const codes = new Set<MerchantErrorCode>(route.scope === 'none' ? PUBLIC_ERRORS : PIPELINE_ERRORS);
  if (SIGNED_METHODS.has(route.method)) {
    for (const c of SIGNED_ERRORS) codes.add(c);
    if (route.idempotencyKey)
      for (const c of IDEMPOTENCY_ERRORS)
        if (c !== 'idempotency-key-required' || route.idempotencyKey === 'required') codes.add(c);
    // the replay guard (api/pipeline/replay.ts) sees every signed POST, whatever its key: the same
    // signature again with no key, or another key than its first use, is 409 request-replayed
    if (route.method === 'POST') codes.add('request-replayed');
  } else if (route.query) {
    codes.add('validation-failed'); // a GET refused a query parameter
  }
  if (route.scope !== 'none' && route.scope !== 'read') codes.add('insufficient-scope');
  for (const c of route.errors ?? []) codes.add(c);
  const byStatus = new Map<number, MerchantErrorCode[]>();
  for (const code of codes) {
    const { status } = ERROR_CODES[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return new Map([...byStatus.entries()].sort(([a], [b]) => a - b));
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Not authenticated (the body carries only the code and a fixed message)',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict',
  413: 'Payload too large',
  415: 'Unsupported media type',
  422: 'Unprocessable',
  429: 'Too many requests (Retry-After in seconds)',
  503: 'Unavailable (Retry-After in seconds)',
};

const header = (name: string) => ({ $ref: `#/components/headers/${name}` });
/** The rate-limit step's headers: on every answer of a merchant route but a 401 (uniform401 removes them). */
export const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'] as const;
const rateLimitHeaders = (route: RouteSpec, status: number) =>
  route.scope === 'none' || status === 401 ? {} : Object.fromEntries(RATE_LIMIT_HEADERS.map((h) => [h, header(h)]));

function operationOf(route: RouteSpec, schemas: Map<string, JsonSchema>) {
  const parameters: unknown[] = [];
  for (const name of route.path.match(/:([A-Za-z0-9_]+)/g)?.map((p) => p.slice(1)) ?? []) {
    const p = route.params?.[name];
    if (!p) throw new Error(`${route.method} ${PREFIX}${route.path}: path parameter ${name} is not described`);
    parameters.push({ name, in: 'path', required: true, description: p.description, schema: { type: 'string' } });
  }
  if (route.query) {
    const props = (route.query.properties ?? {}) as Record<string, JsonSchema>;
    const required = (route.query.required ?? []) as string[];
    for (const [name, schema] of Object.entries(props)) {
      const { description, ...rest } = schema as { description?: string };
      parameters.push({
        name,
        in: 'query',
        required: required.includes(name),
        ...(description ? { description } : {}),
        schema: refs(rest, schemas),
      });
    }
  }
  if (SIGNED_METHODS.has(route.method)) {
    parameters.push({ $ref: '#/components/parameters/X-Timestamp' }, { $ref: '#/components/parameters/X-Signature' });
  }
  if (route.idempotencyKey) {
    parameters.push({
      $ref: `#/components/parameters/Idempotency-Key${route.idempotencyKey === 'required' ? '' : '-optional'}`,
    });
  }
  parameters.push({ $ref: '#/components/parameters/X-Request-Id' });

  const responses: Record<string, unknown> = {};
  for (const [status, r] of Object.entries(route.responses)) {
    const type = r.contentType ?? 'application/json';
    responses[status] = {
      description: r.description,
      headers: {
        'X-Request-Id': header('X-Request-Id'),
        ...rateLimitHeaders(route, Number(status)),
        ...(route.idempotencyKey ? { 'Idempotent-Replayed': header('Idempotent-Replayed') } : {}),
      },
      ...(r.body ? { content: { [type]: { schema: refs(r.body, schemas) } } } : {}),
    };
  }
  for (const [status, codes] of errorCodesOf(route)) {
    const retry = status === 429 || status === 503 || codes.includes('idempotency-in-progress');
    responses[String(status)] = {
      description: `${STATUS_TEXT[status] ?? 'Error'}. Codes:\n\n${codes.map((c) => `- \`${c}\`: ${ERROR_CODES[c].when}`).join('\n')}`,
      'x-error-codes': codes,
      headers: {
        'X-Request-Id': header('X-Request-Id'),
        ...rateLimitHeaders(route, status),
        ...(retry ? { 'Retry-After': header('Retry-After') } : {}),
        ...(status === 401 ? { 'WWW-Authenticate': header('WWW-Authenticate') } : {}),
      },
      content: { 'application/json': { schema: refs(ErrorBody, schemas) } },
    };
  }

  const scopeText =
    route.scope === 'none'
      ? 'No API key needed.'
      : `Scope: \`${route.scope}\`${route.scope === 'read' ? ' (any key)' : route.scope === 'payments' ? ' or `full`' : ''}.${SIGNED_METHODS.has(route.method) ? ' Signed (X-Timestamp, X-Signature).' : ''}`;
  return {
    operationId: route.operationId,
    summary: route.summary,
    description: [route.description, scopeText].filter(Boolean).join('\n\n'),
    tags: [route.tag],
    'x-scope': route.scope,
    ...(route.scope === 'none' ? { security: [] } : {}),
    parameters,
    ...(route.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: refs(route.body, schemas) } } } }
      : {}),
    responses,
  };
}

/** The document of these /v1 routes; without `serverUrl`, a `{baseUrl}` variable (the committed form). */
export function apiDocument(routes: readonly RouteSpec[], serverUrl?: string): OpenApiDocument {
  const schemas = new Map<string, JsonSchema>();
  refs(ErrorBody, schemas);
  const paths: OpenApiDocument['paths'] = {};
  const ids = new Set<string>();
  for (const route of routes) {
    if (ids.has(route.operationId)) throw new Error(`operationId ${route.operationId} is used twice`);
    ids.add(route.operationId);
    const path = PREFIX + openApiPath(route.path);
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operationOf(route, schemas);
  }
  const tagNames = new Set(routes.map((r) => r.tag));
  const undescribed = [...tagNames].filter((name) => !TAGS.some((t) => t.name === name));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Payments API',
      version: '1.0.0',
      summary: 'Mobile-money and card payments, refunds, payouts and signed webhooks for merchants in the DRC.',
      description: API_DESCRIPTION,
    },
    servers: serverUrl
      ? [{ url: serverUrl }]
      : [
          {
            url: '{baseUrl}',
            description: "The service's BASE_URL",
            variables: { baseUrl: { default: 'http://127.0.0.1:3000', description: 'BASE_URL of the deployment' } },
          },
        ],
    tags: [...TAGS.filter((t) => tagNames.has(t.name)), ...undescribed.map((name) => ({ name }))],
    paths,
    components: {
      schemas: Object.fromEntries([...schemas.entries()].sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description:
            'The API key (`svc_test_…` or `svc_live_…`) as a Bearer token on every request. POST, PUT, PATCH and DELETE are also signed with the secret (`sk_…`): see "Signing requests".',
        },
      },
      parameters: {
        'X-Timestamp': {
          name: 'X-Timestamp',
          in: 'header',
          required: true,
          description: 'Unix seconds of sending; refused beyond ±5 minutes (401 `timestamp-expired`).',
          schema: { type: 'string', pattern: '^[0-9]{1,12}$' },
        },
        'X-Signature': {
          name: 'X-Signature',
          in: 'header',
          required: true,
          description:
            'Lowercase hex HMAC-SHA256, keyed by the secret (`sk_…`), of `<X-Timestamp>.<METHOD>.<path>.<raw body>` (401 `signature-invalid`).',
          schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
        },
        'Idempotency-Key': {
          name: 'Idempotency-Key',
          in: 'header',
          required: true,
          description:
            'UUID v4. The same key and body within 24 h replays the first answer; another body is 409 `idempotency-conflict`. The same signed request (same X-Signature) under another key is 409 `request-replayed`: a retry keeps its key, or is signed again.',
          schema: { type: 'string', format: 'uuid' },
        },
        'Idempotency-Key-optional': {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'UUID v4, optional: the same key and body within 24 h replays the first answer. Without one, the same signed request sent twice is 409 `request-replayed`.',
          schema: { type: 'string', format: 'uuid' },
        },
        'X-Request-Id': {
          name: 'X-Request-Id',
          in: 'header',
          required: false,
          description: 'Your correlation id (kept if valid, else a new one is made); echoed on the response.',
          schema: { type: 'string', maxLength: 200 },
        },
      },
      headers: {
        'X-Request-Id': {
          description: 'The request id (also in error bodies); quote it to support.',
          schema: { type: 'string' },
        },
        'Retry-After': {
          description:
            'Seconds to wait before retrying: on 429 `rate-limit-exceeded` (to the end of the rate-limit window), 503 (`maintenance`, `service-unavailable`) and 409 `idempotency-in-progress`. Not on 429 `redelivery-limit`, which is final.',
          schema: { type: 'string', pattern: '^[0-9]+$' },
        },
        'X-RateLimit-Limit': {
          description: `Requests allowed per API key in one rate-limit window of 60 s (100). Sent on every answer that passed the rate-limit step: every success, 429, and the refusals of the later steps and of the route. Not on 401s, nor on a refusal that comes before the request is counted (e.g. 403 \`ip-not-allowed\` or \`merchant-suspended\`, 503 \`maintenance\`, 503 \`service-unavailable\` when the count cannot be kept).`,
          schema: { type: 'string', pattern: '^[0-9]+$' },
        },
        'X-RateLimit-Remaining': {
          description:
            'Requests this API key has left in the current window, this one counted (0 when the limit is reached). Sent with X-RateLimit-Limit.',
          schema: { type: 'string', pattern: '^[0-9]+$' },
        },
        'X-RateLimit-Reset': {
          description:
            "Unix seconds at which the current window ends and the key's count starts again (a window opens with the key's first request in it and lasts 60 s). Sent with X-RateLimit-Limit.",
          schema: { type: 'string', pattern: '^[0-9]+$' },
        },
        'WWW-Authenticate': {
          description: 'The authentication challenge of every 401, whichever check refused: `Bearer realm="api"`.',
          schema: { type: 'string' },
        },
        'Idempotent-Replayed': {
          description: '`true` when this is the stored answer to an earlier request with the same Idempotency-Key.',
          schema: { type: 'string' },
        },
      },
    },
    security: [{ apiKey: [] }],
  };
}
