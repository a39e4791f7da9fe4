/**
 * Facts about a merchant request that several pipeline steps share. Pure functions, no I/O.
 */

/**
 * Methods that must carry X-Timestamp and X-Signature. The spec names POST, PATCH and DELETE;
 * PUT is signed too, so that no method able to change anything is ever unsigned (no /v1 route
 * uses PUT today; the signing client signs it the same way).
 */
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

/**
 * Routes whose POST needs an Idempotency-Key (spec 5.4), and how the key is held:
 *   claim-first  the key is claimed `in_progress` before the route runs and completed after it
 *                (a second request meanwhile: 409 idempotency-in-progress)
 *   atomic       the route writes the key, completed with its answer, in the same statement as
 *                its work (ctx.state.idempotency); a second request meanwhile waits for that
 *                statement and gets the replay. One round trip and one commit fewer per request.
 */
export type IdempotencyMode = 'claim-first' | 'atomic';

export const IDEMPOTENT_ROUTES: ReadonlyMap<string, IdempotencyMode> = new Map([
  ['POST /v1/payments', 'atomic'],
  ['POST /v1/payouts', 'claim-first'],
]);

export function idempotencyModeOf(method: string, path: string): IdempotencyMode | undefined {
  return IDEMPOTENT_ROUTES.get(`${method} ${canonicalPath(path)}`);
}
