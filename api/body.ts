import getRawBody from 'raw-body';
import type { Context } from 'koa';
import { ApiError, badRequest, validationFailed } from '../shared/errors';

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
export const payloadTooLarge = () =>
  new ApiError(413, 'payload-too-large', 'The request body is too large', undefined, { Connection: 'close' });

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
    throw badRequest('invalid-body', 'The request body could not be read');
  }
  return ctx.state.rawBody;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** JSON of UTF-8 bytes; invalid UTF-8 (which a lenient decode would silently replace) is invalid JSON too. */
export function parseJson(raw: Buffer): unknown {
  let value: unknown;
  try {
    value = JSON.parse(UTF8.decode(raw));
  } catch {
    throw badRequest('invalid-json', 'The request body is not valid JSON');
  }
  const nul = pathOfNul(value);
  if (nul !== null) throw validationFailed(nul || 'body', `${nul || 'body'} must not contain the NUL character`);
  return value;
}

/**
 * Where a string or key holds U+0000, or null. Postgres text and jsonb cannot store it: refused
 * at the edge, it can never fail a later write (a payment that could not be credited). Walked
 * with an explicit stack: a deeply nested body must not overflow the call stack.
 */
export function pathOfNul(root: unknown): string | null {
  interface Node {
    value: unknown;
    key: string;
    parent: Node | null;
  }
  const pathOf = (n: Node | null): string => {
    const keys: string[] = [];
    for (let at = n; at && at.parent; at = at.parent) keys.push(at.key);
    return keys.reverse().join('.');
  };
  const stack: Node[] = [{ value: root, key: '', parent: null }];
  while (stack.length) {
    const node = stack.pop()!;
    const { value } = node;
    if (typeof value === 'string') {
      if (value.includes('\0')) return pathOf(node);
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        const child: Node = { value: v, key: k, parent: node };
        if (k.includes('\0')) return pathOf(child);
        stack.push(child);
      }
    }
  }
  return null;
}

export function requireJsonContentType(ctx: Context): void {
  if (!ctx.request.is('application/json')) {
    throw new ApiError(415, 'unsupported-media-type', 'Content-Type must be application/json');
  }
}

/** Reads and parses a JSON body (admin routes; the merchant pipeline has its own ordered steps). */
export async function readJson(ctx: Context, limit = DEFAULT_BODY_LIMIT): Promise<unknown> {
  const raw = await readRawBody(ctx, limit);
  if (raw.length === 0) return {};
  requireJsonContentType(ctx);
  return parseJson(raw);
}
