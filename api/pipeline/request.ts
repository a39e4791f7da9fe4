/** Facts about a merchant request that several pipeline steps share. Pure functions, no I/O. */

/** Methods that must be signed: the spec's POST, PATCH and DELETE, and PUT, so no method able to change anything is unsigned. */
export const SIGNED_METHODS: ReadonlySet<string> = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

/** Methods whose JSON body is parsed (docs/decisions.md#merchant-pipeline: Content-Type on POST/PATCH/PUT). */
export const JSON_METHODS: ReadonlySet<string> = new Set(['POST', 'PATCH', 'PUT']);

/** Paths the pipeline guards. Case-insensitive: the router matches `/V1/...` as `/v1/...`. */
export const V1_PATH = /^\/v1(\/|$)/i;

/**
 * The route a path reaches, as the router sees it: @koa/router matches case-insensitively and
 * ignores a trailing slash, so `/V1/Payments/` is `/v1/payments`. Scope and idempotency decide
 * on this form, never on the text as sent (the signature covers the text as sent).
 */
export function canonicalPath(path: string): string {
  const lower = path.toLowerCase();
  return lower.length > 1 ? lower.replace(/\/+$/, '') || '/' : lower;
}

/** Routes whose POST takes an Idempotency-Key (docs/decisions.md#merchant-pipeline; a refund: docs/decisions.md#refund-retries). */
export type IdempotencyRule = 'required' | 'optional';

/**
 * Per route: its key's rule, and where a signed request's signature is taken (docs/decisions.md#replayed-signed-requests):
 * `with-the-key` in the one statement that writes the key, the row
 * and its jobs (the writer's keyed creation, shared/operations/writer.ts), else `before` the
 * route, in a statement of its own (api/pipeline/replay.ts).
 */
const IDEMPOTENT_ROUTES: ReadonlyArray<[RegExp, IdempotencyRule, 'with-the-key' | 'before']> = [
  [/^POST \/v1\/payments$/, 'required', 'with-the-key'],
  [/^POST \/v1\/payouts$/, 'required', 'before'],
  [/^POST \/v1\/payment_links$/, 'required', 'before'],
  [/^POST \/v1\/payments\/[^/]+\/refund$/, 'optional', 'before'],
];

const idempotentRoute = (method: string, path: string) => {
  const route = `${method} ${canonicalPath(path)}`;
  return IDEMPOTENT_ROUTES.find(([re]) => re.test(route));
};

export function idempotencyOf(method: string, path: string): IdempotencyRule | undefined {
  return idempotentRoute(method, path)?.[1];
}

/** Whether a signed request's signature is taken with its key, by the statement that writes its work (see IDEMPOTENT_ROUTES). */
export function signatureTakenWithKey(method: string, path: string): boolean {
  return idempotentRoute(method, path)?.[2] === 'with-the-key';
}
