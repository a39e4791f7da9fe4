import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import type Router from '@koa/router';
import { v1PublicRouter, v1Router, V1_ROUTES } from '../../api/v1';
import { v1Document } from '../../api/v1';
import { DOCUMENT_FILE, renderDocument, renderTypes, TYPES_FILE } from '../../api/openapi/files';
import { openApiPath } from '../../api/routeTable';
import { validator } from '../../shared/validation';
import { scopeAllows } from '../../api/pipeline/access';
import { idempotencyOf } from '../../api/pipeline/request';
import { ERROR_CODES, type MerchantErrorCode } from '../../api/openapi/errors';
import { rateLimit } from '../../api/pipeline/rateLimit';
import { unauthorized } from '../../api/pipeline/unauthorized';
import { httpError } from '../../api/middleware/errors';
import { TooManyRequests, Unavailable } from '../../shared/errors';

/**
 * The route half of the contract test: the routers' registered routes and the OpenAPI document
 * are the same set, the committed document and SDK types are what the route table gives today,
 * and what the document says about scopes is what the pipeline enforces. (The response half:
 * test/helpers/contract.ts checks every answer the integration tests' clients receive.)
 */

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

function registered(router: Router): string[] {
  const out: string[] = [];
  for (const layer of router.stack) {
    for (const m of layer.methods) if (METHODS.includes(m)) out.push(`${m} ${openApiPath(String(layer.path))}`);
  }
  return out;
}

function documented(): string[] {
  const doc = v1Document();
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
  );
}

describe('OpenAPI document (contract)', () => {
  const doc = v1Document();

  it('documents every route the /v1 routers register, and nothing else', () => {
    const routes = [...registered(v1Router), ...registered(v1PublicRouter)].sort();
    expect(routes.length).to.be.greaterThan(10);
    const docs = documented().sort();
    const missing = routes.filter((r) => !docs.includes(r));
    expect(
      missing,
      'routes missing from the document: declare them in the route table (api/routeTable.ts)',
    ).to.deep.equal([]);
    expect(
      docs.filter((d) => !routes.includes(d)),
      'documented operations no router serves',
    ).to.deep.equal([]);
  });

  it('is OpenAPI 3.1 with the security scheme, the signing headers and unique operation ids', () => {
    expect(doc.openapi).to.equal('3.1.0');
    expect(doc.components.securitySchemes.apiKey).to.include({ type: 'http', scheme: 'bearer' });
    const ids = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        expect(ids.has(op.operationId), op.operationId).to.equal(false);
        ids.add(op.operationId);
        const refs = JSON.stringify(op.parameters);
        const signed = method !== 'get';
        expect(refs.includes('#/components/parameters/X-Signature'), `${method} ${path} signed`).to.equal(signed);
        expect(refs.includes('#/components/parameters/X-Timestamp'), `${method} ${path} timestamp`).to.equal(signed);
        for (const p of path.match(/\{[^}]+\}/g) ?? []) {
          expect(
            op.parameters.some((x: any) => x.in === 'path' && `{${x.name}}` === p),
            `${path} ${p}`,
          ).to.equal(true);
        }
        expect(
          Object.keys(op.responses).some((s) => /^2/.test(s)),
          `${method} ${path} success`,
        ).to.equal(true);
      }
    }
    expect(doc.paths['/v1/payments'].post.parameters).to.deep.include({
      $ref: '#/components/parameters/Idempotency-Key',
    });
    expect(doc.paths['/v1/openapi.json'].get.security).to.deep.equal([]);
    expect(doc.info.description)
      .to.match(/## Signing requests/)
      .and.to.match(/## Webhooks/);
  });

  it('passes the Redocly OpenAPI linter (recommended rules) without an error', async function () {
    this.timeout(20_000);
    const { createConfig, lintFromString } = await import('@redocly/openapi-core');
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: renderDocument(), absoluteRef: 'openapi.json', config });
    const errors = problems
      .filter((p) => p.severity === 'error')
      .map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    expect(errors).to.deep.equal([]);
  });

  it("shows request examples that the route's own validation accepts", () => {
    let seen = 0;
    for (const route of V1_ROUTES) {
      const body = route.body as { schema?: { examples?: unknown[] }; examples?: unknown[] } | undefined;
      const schema = body?.schema ?? body;
      for (const example of schema?.examples ?? []) {
        seen++;
        expect(() => validator(schema!)(example), `${route.operationId} ${JSON.stringify(example)}`).to.not.throw();
      }
    }
    expect(seen).to.be.greaterThan(2);
  });

  it('resolves every $ref', () => {
    const text = JSON.stringify(doc);
    for (const [, ref] of text.matchAll(/"\$ref":"#\/([^"]+)"/g)) {
      let node: any = doc;
      for (const part of ref.split('/')) node = node?.[part];
      expect(node, ref).to.not.equal(undefined);
    }
  });

  it('lists each error code under its status', () => {
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values<any>(item)) {
        for (const [status, r] of Object.entries<any>(op.responses)) {
          for (const code of (r['x-error-codes'] ?? []) as MerchantErrorCode[])
            expect(ERROR_CODES[code].status, `${op.operationId} ${code}`).to.equal(Number(status));
        }
      }
    }
  });

  it('says of each route the least scope the pipeline lets through', () => {
    const scopes = ['read', 'payments', 'full'] as const;
    for (const route of V1_ROUTES) {
      if (route.scope === 'none') continue;
      const path = `/v1${route.path.replace(/:[A-Za-z_]+/g, 'x')}`;
      const allowed = scopes.filter((s) => scopeAllows(s, route.method, path));
      expect(allowed[0], `${route.method} ${route.path}`).to.equal(route.scope);
    }
  });

  it('requires (or takes) an Idempotency-Key on exactly the routes whose key the pipeline requires (or takes)', () => {
    for (const r of V1_ROUTES) {
      const path = `/v1${r.path.replace(/:[A-Za-z_]+/g, 'x_1')}`;
      expect(idempotencyOf(r.method, path), `${r.method} ${path}`).to.equal(r.idempotencyKey);
    }
  });

  it('describes the headers the pipeline sends: rate-limit headers, WWW-Authenticate on 401, Retry-After', async () => {
    // the names as the steps set them, not a copy: the rate-limit step on a GET while Redis is
    // not ready (it counts in process then), and the headers of a 401, a 429 and a 503
    const sent: Record<string, string> = {};
    const services = {
      config: { rateLimitPerMinute: 100, queuePrefix: 'openapi-test' },
      redis: { status: 'end' },
      clock: { now: () => Date.now() },
    } as never;
    const ctx = {
      method: 'GET',
      state: { auth: { credentialId: 'c' }, log: { warn() {}, error() {} } },
      set: (h: Record<string, string>) => Object.assign(sent, h),
    };
    await rateLimit(services)(ctx as never, async () => undefined);
    const rateHeaders = Object.keys(sent);
    expect(rateHeaders).to.include.members(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']);
    const on401 = Object.keys(httpError(unauthorized('auth-required')).headers);
    expect(on401).to.include('WWW-Authenticate');
    const retry = [
      ...Object.keys(httpError(new TooManyRequests('rate-limit-exceeded', 'x', 1)).headers),
      ...Object.keys(httpError(new Unavailable('maintenance', 'x', 1)).headers),
    ];
    expect(retry).to.include('Retry-After');

    for (const name of [...rateHeaders, ...on401, ...retry]) {
      expect((doc.components.headers[name] as { description?: string })?.description, `components.headers.${name}`)
        .to.be.a('string')
        .and.not.equal('');
    }
    let checked = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const [status, r] of Object.entries<any>(op.responses)) {
          const where = `${method.toUpperCase()} ${path} ${status}`;
          const headers = Object.keys(r.headers ?? {});
          const merchant = op['x-scope'] !== 'none';
          // a 401 leaves without the rate-limit headers (api/pipeline/unauthorized.ts)
          for (const h of rateHeaders)
            expect(headers.includes(h), `${where} ${h}`).to.equal(merchant && status !== '401');
          if (status === '401') for (const h of on401) expect(headers, where).to.include(h);
          if (status === '429' || status === '503') for (const h of retry) expect(headers, where).to.include(h);
          for (const h of [...rateHeaders, ...on401, ...retry].filter((x) => headers.includes(x)))
            expect(r.headers[h].$ref, `${where} ${h}`).to.equal(`#/components/headers/${h}`);
          checked++;
        }
      }
    }
    expect(checked).to.be.greaterThan(50);
  });

  it('is committed as built: shared/client/openapi.json and apiTypes.ts are fresh (run `npm run openapi`)', async function () {
    this.timeout(20_000);
    expect(
      readFileSync(DOCUMENT_FILE, 'utf8') === renderDocument(),
      'shared/client/openapi.json is stale: run `npm run openapi`',
    ).to.equal(true);
    expect(
      readFileSync(TYPES_FILE, 'utf8') === (await renderTypes()),
      'shared/client/apiTypes.ts is stale: run `npm run openapi`',
    ).to.equal(true);
  });
});
