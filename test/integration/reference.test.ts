import { expect } from 'chai';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { v1Document } from '../../api/v1';

describe('API reference: GET /v1/openapi.json and /docs', () => {
  let env: TestEnv;
  before(async () => {
    env = await startTestEnv();
  });
  after(() => env.close());

  it('serves the OpenAPI document without a key, with this service as its server', async () => {
    const res = await fetch(`${env.baseUrl}/v1/openapi.json`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.headers.get('x-request-id')).to.be.a('string');
    const doc: any = await res.json();
    expect(doc.openapi).to.equal('3.1.0');
    expect(doc.servers).to.deep.equal([{ url: env.baseUrl }]);
    const { servers: _servers, ...rest } = doc;
    const { servers: _committed, ...built } = v1Document();
    expect(rest).to.deep.equal(JSON.parse(JSON.stringify(built)));
    expect(doc.paths['/v1/payments'].post.operationId).to.equal('createPayment');
    const viaClient = await (await env.merchant()).client.get('/v1/openapi.json'); // contract-checked like every route
    expect(viaClient.status).to.equal(200);
  });

  it('does not let a bad key or a wrong method through the public routes', async () => {
    const withBadKey = await fetch(`${env.baseUrl}/v1/openapi.json`, {
      headers: { Authorization: 'Bearer svc_test_nope' },
    });
    expect(withBadKey.status).to.equal(200);
    const post = await fetch(`${env.baseUrl}/v1/openapi.json`, { method: 'POST' });
    expect(post.status).to.equal(401); // any other method is an ordinary /v1 request: the pipeline answers
  });

  it('serves the reference page with a CSP that allows only this origin, and the Redoc bundle from node_modules', async () => {
    const page = await fetch(`${env.baseUrl}/docs`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).to.include("default-src 'none'").and.include("script-src 'self'").and.include("connect-src 'self'");
    expect(csp).to.not.match(/https?:|\*/);
    expect(page.headers.get('x-frame-options')).to.equal('DENY');
    const html = await page.text();
    expect(html).to.include('spec-url="/v1/openapi.json"').and.include('<script src="/docs/redoc.standalone.js">');
    expect(html).to.not.match(/<script>/); // no inline script
    const bundle = await fetch(`${env.baseUrl}/docs/redoc.standalone.js`);
    expect(bundle.status).to.equal(200);
    expect(bundle.headers.get('content-type')).to.match(/javascript/);
    expect((await bundle.text()).length).to.be.greaterThan(500_000);
  });
});
