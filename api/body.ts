import getRawBody from 'raw-body';
import type { Context } from 'koa';
import { BadRequest, PayloadTooLarge, UnsupportedMediaType, ValidationFailed } from '../shared/errors';
import { badText, strictUtf8, textProblem, TEXT_PROBLEM_MESSAGE } from '../shared/text';

/** Global body cap: step 1 of the pipeline (docs/decisions.md#merchant-pipeline). */
export const GLOBAL_BODY_LIMIT = 500 * 1024 * 1024;
/** The specification caps POST /v1/payments bodies at 100 KB; so are operator requests. */
export const PAYMENT_BODY_LIMIT = 100 * 1024;
/** Every other merchant body: none needs more than a few KB; the cap bounds what a request makes us buffer. */
export const V1_BODY_LIMIT = 1024 * 1024;

/** Reads the exact request bytes once (signatures cover them), with a limit; 413 above it. */
export async function readRawBody(ctx: Context, limit: number): Promise<Buffer> {
  if (ctx.state.rawBody) return ctx.state.rawBody;
  const declared = ctx.request.length;
  if (declared !== undefined && declared > limit) throw new PayloadTooLarge();
  try {
    ctx.state.rawBody = await getRawBody(ctx.req, { limit, length: declared });
  } catch (err) {
    const e = err as { type?: string; status?: number };
    if (e.type === 'entity.too.large') throw new PayloadTooLarge();
    throw new BadRequest('invalid-body', 'The request body could not be read');
  }
  return ctx.state.rawBody;
}

/**
 * JSON of UTF-8 bytes; invalid UTF-8 is invalid JSON. A string or key holding NUL or a lone
 * surrogate (Postgres could not keep it as sent) is 400 validation-failed naming the nearest
 * clean key (`metadata` for anything inside it), never the refused key. Outside metadata, a
 * number written with a fraction or an exponent that rounds to an integer (`1e3`) is 400 on its
 * field (docs/decisions.md#integers-are-integers-in-the-text: they are amounts, fees, limits, counts).
 */
export function parseJson(raw: Buffer): unknown {
  let text: string;
  let value: unknown;
  try {
    text = strictUtf8.decode(raw);
    value = JSON.parse(text);
  } catch {
    throw new BadRequest('invalid-json', 'The request body is not valid JSON');
  }
  const bad = badText(value);
  if (bad) {
    const keys = bad.path ? bad.path.split('.') : [];
    const badKey = keys.findIndex((k) => textProblem(k) !== null);
    const clean = keys[0] === 'metadata' ? ['metadata'] : badKey === -1 ? keys : keys.slice(0, badKey);
    const param = clean.join('.') || 'body';
    throw new ValidationFailed(param, `${param} ${TEXT_PROBLEM_MESSAGE[bad.problem]}`);
  }
  const written = roundedNumber(text);
  if (written)
    throw new ValidationFailed(written, `${written} must be an integer, written without a fraction or an exponent`);
  return value;
}

/** Whether a number token's text has a fraction or an exponent while its value is an integer. */
const roundsToInteger = (token: string) => /[.eE]/.test(token) && Number.isInteger(Number(token));

/**
 * The dotted path of the first number of a valid JSON text written with a fraction or an
 * exponent whose value is an integer, outside `metadata`; null when there is none. A scan of
 * the text beside JSON.parse (which keeps no source text on Node 20): containers and keys are
 * followed, strings skipped. Most bodies have no digit next to '.', 'e' or 'E' and skip it.
 */
export function roundedNumber(text: string): string | null {
  if (!/\d[.eE]/.test(text)) return null;
  type Frame = { keys: boolean; key: string; index: number };
  const stack: Frame[] = [];
  const path = () => stack.map((f) => (f.keys ? f.key : String(f.index))).join('.');
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (expectKey) stack[stack.length - 1].key = JSON.parse(text.slice(i, j + 1));
      i = j;
    } else if (c === '{') {
      stack.push({ keys: true, key: '', index: 0 });
      expectKey = true;
    } else if (c === '[') {
      stack.push({ keys: false, key: '', index: 0 });
      expectKey = false;
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ':') {
      expectKey = false;
    } else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top.keys) expectKey = true;
      else top.index++;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i + 1;
      while (j < text.length && /[0-9eE.+-]/.test(text[j])) j++;
      if (roundsToInteger(text.slice(i, j)) && !(stack[0]?.keys && stack[0].key === 'metadata'))
        return path() || 'body';
      i = j - 1;
    }
  }
  return null;
}

export function requireJsonContentType(ctx: Context): void {
  const matched = ctx.request.is('application/json');
  // Koa sees no type on a request without a body (null): the header itself is judged then
  const json = matched === null ? ctx.request.type.trim().toLowerCase() === 'application/json' : matched !== false;
  if (!json) throw new UnsupportedMediaType('Content-Type must be application/json');
}

/** Reads and parses a JSON body (admin routes; the merchant pipeline has its own ordered steps). */
export async function readJson(ctx: Context): Promise<unknown> {
  const raw = await readRawBody(ctx, PAYMENT_BODY_LIMIT);
  if (raw.length === 0) return {};
  requireJsonContentType(ctx);
  return parseJson(raw);
}
