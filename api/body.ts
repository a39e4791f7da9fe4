import getRawBody from 'raw-body';
import type { Context } from 'koa';
import { BadRequest, PayloadTooLarge, UnsupportedMediaType, ValidationFailed } from '../shared/errors';
import { badText, strictUtf8, TEXT_PROBLEM_MESSAGE } from '../shared/text';

/** Global body cap of spec 5.6 step 1 / section 8. */
export const GLOBAL_BODY_LIMIT = 500 * 1024 * 1024;
export const DEFAULT_BODY_LIMIT = 100 * 1024;
/** Spec 8: POST /v1/payments bodies are capped at 100 KB. */
export const PAYMENT_BODY_LIMIT = 100 * 1024;
/**
 * Every other merchant request body (refund, payout, ...): 1 MB. None of them needs more than a
 * few KB; the cap only bounds what one request may make a web process buffer.
 */
export const V1_BODY_LIMIT = 1024 * 1024;

/**
 * 413 closes the connection: otherwise Node would drain (read and discard) the rest of a body
 * it refused, up to 500 MB, to keep the connection alive.
 */
export const payloadTooLarge = () => new PayloadTooLarge();

/** Reads the exact request bytes once (signatures cover them), with a limit; 413 above it. */
export async function readRawBody(ctx: Context, limit = DEFAULT_BODY_LIMIT): Promise<Buffer> {
  if (ctx.state.rawBody) return ctx.state.rawBody;
  const declared = ctx.request.length;
  if (declared !== undefined && declared > limit) throw payloadTooLarge();
  try {
    ctx.state.rawBody = await getRawBody(ctx.req, { limit, length: declared });
  } catch (err) {
    const e = err as { type?: string; status?: number };
    if (e.type === 'entity.too.large') throw payloadTooLarge();
    throw new BadRequest('invalid-body', 'The request body could not be read');
  }
  return ctx.state.rawBody;
}

/**
 * JSON of UTF-8 bytes. Invalid UTF-8 (which a lenient decode would silently replace) is invalid
 * JSON too; a string or key holding NUL or a lone surrogate is 400 validation-failed naming it
 * (shared/text.ts: Postgres could not keep it as sent).
 */
export function parseJson(raw: Buffer): unknown {
  let value: unknown;
  try {
    value = JSON.parse(strictUtf8.decode(raw));
  } catch {
    throw new BadRequest('invalid-json', 'The request body is not valid JSON');
  }
  const bad = badText(value);
  if (bad) {
    const param = bad.path || 'body';
    throw new ValidationFailed(param, `${param} ${TEXT_PROBLEM_MESSAGE[bad.problem]}`);
  }
  return value;
}

/** Where a string or key holds U+0000, or null (query strings: see requestTarget). */
export function pathOfNul(root: unknown): string | null {
  const bad = badText(root);
  return bad && bad.problem === 'nul' ? bad.path : null;
}

export function requireJsonContentType(ctx: Context): void {
  const matched = ctx.request.is('application/json');
  // Koa sees no type on a request without a body (null): the header itself is judged then
  const json = matched === null ? ctx.request.type.trim().toLowerCase() === 'application/json' : matched !== false;
  if (!json) {
    throw new UnsupportedMediaType('Content-Type must be application/json');
  }
}

/** Reads and parses a JSON body (admin routes; the merchant pipeline has its own ordered steps). */
export async function readJson(ctx: Context, limit = DEFAULT_BODY_LIMIT): Promise<unknown> {
  const raw = await readRawBody(ctx, limit);
  if (raw.length === 0) return {};
  requireJsonContentType(ctx);
  return parseJson(raw);
}
