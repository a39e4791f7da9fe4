import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { httpError } from '../../api/middleware/errors';
import { unauthorized } from '../../api/pipeline/unauthorized';
import {
  BadRequest,
  Conflict,
  Forbidden,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  TooManyRequests,
  Unauthenticated,
  Unavailable,
  UnsupportedMediaType,
  Unprocessable,
  ValidationFailed,
} from '../../shared/errors';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('domain errors and their one HTTP mapping', () => {
  it('maps each kind to the status, headers and fields of docs/decisions.md#errors', () => {
    const cases = [
      [new ValidationFailed('amount', 'bad'), 400, {}],
      [new BadRequest('operator-mismatch', 'no', 'phone'), 400, {}],
      [new Unauthenticated('api-key-invalid'), 401, {}],
      [unauthorized('signature-invalid'), 401, { 'WWW-Authenticate': 'Bearer realm="api"' }],
      [new Forbidden('insufficient-scope', 'no'), 403, {}],
      [new NotFound('Payment'), 404, {}],
      [new MethodNotAllowed('no', 'GET, HEAD'), 405, { Allow: 'GET, HEAD' }],
      [new Conflict('idempotency-in-progress', 'wait', { retryAfter: 1 }), 409, { 'Retry-After': '1' }],
      [new Conflict('reference-conflict', 'used', { param: 'reference' }), 409, {}],
      [new Conflict('request-replayed', 'again'), 409, {}],
      [new PayloadTooLarge(), 413, { Connection: 'close' }],
      [new UnsupportedMediaType('json only'), 415, {}],
      [new Unprocessable('insufficient-balance', 'short'), 422, {}],
      [new TooManyRequests('rate-limit-exceeded', 'slow down', 12), 429, { 'Retry-After': '12' }],
      [new Unavailable('service-unavailable', 'later', 5), 503, { 'Retry-After': '5' }],
      [new Unavailable('maintenance', 'later', 300), 503, { 'Retry-After': '300' }],
    ] as const;
    for (const [err, status, headers] of cases) {
      const h = httpError(err);
      expect(h.status, err.code).to.equal(status);
      expect(h.headers, err.code).to.deep.equal(headers);
      expect(h.code).to.equal(err.code);
      expect(h.message).to.equal(err.message);
    }
    expect(httpError(new ValidationFailed('amount', 'bad')).param).to.equal('amount');
    expect(httpError(new NotFound('Payment')).message).to.equal('Payment not found');
    expect(new Unauthenticated('api-key-invalid').message).to.equal('The API key is not valid');
  });

  it('keeps HTTP out of shared/: no file there imports api/, koa or an HTTP error class', () => {
    const root = join(__dirname, '../../shared');
    // the sandbox provider is a server of its own (a stand-in for an operator), not the service
    const sandbox = join(root, 'providers/sandbox');
    const offenders = filesUnder(root).filter((f) => {
      const text = readFileSync(f, 'utf8');
      return (
        /from '(\.\.\/)+api\/|\bApiError\b/.test(text) ||
        (!f.startsWith(sandbox) && /from 'koa'|\bHttpError\b/.test(text))
      );
    });
    expect(offenders).to.deep.equal([]);
  });
});
