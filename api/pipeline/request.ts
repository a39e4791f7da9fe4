/** Facts about a merchant request that several pipeline steps share. Pure functions, no I/O. */

/** Methods that must be signed: the spec's POST, PATCH and DELETE, and PUT, so no method able to change anything is unsigned. */
export const SIGNED_METHODS: ReadonlySet<string> = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

/** Methods whose JSON body is parsed (spec 5.2: Content-Type on POST/PATCH/PUT). */
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

/** Routes whose POST takes an Idempotency-Key (spec 5.4; decisions.md "Refund retries"). */
export type IdempotencyRule = 'required' | 'optional';

const IDEMPOTENT_ROUTES: ReadonlyArray<[RegExp, IdempotencyRule]> = [
  [/^POST \/v1\/payments$/, 'required'],
  [/^POST \/v1\/payouts$/, 'required'],
  [/^POST \/v1\/payments\/[^/]+\/refund$/, 'optional'],
];

export function idempotencyOf(method: string, path: string): IdempotencyRule | undefined {
  const route = `${method} ${canonicalPath(path)}`;
  return IDEMPOTENT_ROUTES.find(([re]) => re.test(route))?.[1];
}
