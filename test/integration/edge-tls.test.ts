import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  edgeCertificate,
  edgeReady,
  HSTS,
  nodeEnv,
  startHaproxy,
  stopHaproxy,
  topologyAt,
  type Topology,
} from '../../scripts/cluster';
import { portOpen } from '../../scripts/local-services';
import { freePort } from '../../scripts/lib/ports';
import { waitFor } from '../../scripts/lib/processes';
import { ServiceClient } from '../../shared/client/signing';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { aMerchant } from '../helpers/money';
import { createCardPayment } from '../helpers/cards';
import { fetchTrusting, handshake } from '../helpers/tls';
import { contract } from '../helpers/contract';

/**
 * The TLS edge of the cluster topology (docs/durability.md#tls-13-at-the-edge): the
 * HAProxy of scripts/cluster.ts, on the certificate `cluster:up` makes with openssl, in front of
 * this file's service. TLS 1.2 is refused, TLS 1.3 serves with HSTS, the merchant API works
 * through it, plain HTTP is redirected except /health/* on the internal port, and BASE_URL
 * (checkout links) is https://.
 */
describe('the TLS edge (HAProxy, TLS 1.3 only)', function () {
  this.timeout(60_000);
  let env: TestEnv;
  let t: Topology;
  let ca: string;
  let edge: string;

  /** two free ports for HAProxy (p+7 HTTPS, p+8 plain), from a base of the test range */
  async function freeBase(): Promise<number> {
    // 19 bases from 5300 to 5480, starting at one of the process's, wrapping round: a second call
    // (HAProxy of the first still up) or another run beside this one finds the next free one
    for (let i = 0; i < 19; i++) {
      const base = 5300 + ((process.pid + i) % 19) * 10;
      if (!(await portOpen(base + 7)) && !(await portOpen(base + 8))) return base;
    }
    throw new Error('no free ports for HAProxy');
  }

  before(async () => {
    env = await startTestEnv({ RATE_LIMIT_PER_MINUTE: '100000' });
    const base = await freeBase();
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-edge-'));
    const web = Number(new URL(env.baseUrl).port);
    t = { ...topologyAt(base, 1), dir };
    t.nodes[0] = { ...t.nodes[0], web };
    ca = readFileSync(edgeCertificate().crt, 'utf8');
    startHaproxy(t);
    await waitFor('HAProxy', () => edgeReady(t), 20_000);
    edge = `https://127.0.0.1:${t.haproxyPort}`;
    // the service's public URL is the edge's, as nodeEnv sets it for the topology's nodes
    env.config.baseUrl = nodeEnv(t, t.nodes[0], 'unused').BASE_URL;
  });

  // HAProxy checks the node every second and takes it out after two slow answers (scripts/cluster.ts):
  // on a loaded machine a check can miss, so each test starts once the edge serves again
  beforeEach(() => waitFor('HAProxy', () => edgeReady(t), 20_000));
  after(async () => {
    if (t) {
      stopHaproxy(t);
      await waitFor('HAProxy to stop', async () => !(await portOpen(t.haproxyPort)), 10_000).catch(() => undefined);
      rmSync(t.dir, { recursive: true, force: true });
    }
    await env?.close();
  });

  it('refuses a TLS 1.2 handshake (and 1.1), and completes a TLS 1.3 one on the certificate it was given', async () => {
    for (const version of ['TLSv1.2', 'TLSv1.1'] as const) {
      const r = await handshake(t.haproxyPort, ca, version);
      expect(r, version).to.have.property('error');
    }
    expect(await handshake(t.haproxyPort, ca, 'TLSv1.3')).to.deep.equal({ protocol: 'TLSv1.3' });
    // a client that does not trust the local certificate gets no answer
    const untrusted = await fetch(`${edge}/health/live`).then(
      () => 'answered',
      (err) => String(err.cause?.code ?? err.message),
    );
    expect(untrusted).to.match(/SELF_SIGNED|UNABLE_TO_VERIFY|CERT/);
  });

  it('serves the merchant API over TLS 1.3, with HSTS on every answer, and checkout links on https://', async () => {
    const secure = fetchTrusting(ca);
    // HAProxy sets HSTS on whatever it answers over HTTPS, the web's value
    const cfg = readFileSync(path.join(t.dir, 'haproxy.cfg'), 'utf8');
    expect(cfg).to.include(`http-response set-header Strict-Transport-Security "${HSTS}"`);
    expect(cfg).to.match(/bind 127\.0\.0\.1:\d+ ssl crt \S+ ssl-min-ver TLSv1\.3/);
    const health = await secure(`${edge}/health/ready`);
    expect(health.status).to.equal(200);
    expect(health.headers.get('x-test-tls-protocol')).to.equal('TLSv1.3');
    expect(health.headers.get('strict-transport-security')).to.equal(HSTS);

    const shop = await aMerchant(env);
    const answers: { status: number; hsts: string | null; protocol: string | null }[] = [];
    const client = new ServiceClient({
      baseUrl: edge,
      apiKey: shop.credential.api_key,
      secret: shop.credential.secret,
      fetch: secure,
      onResponse: (r) => {
        contract().check(r);
        answers.push({
          status: r.status,
          hsts: r.headers.get('strict-transport-security'),
          protocol: r.headers.get('x-test-tls-protocol'),
        });
      },
    });
    const card = await createCardPayment(client);
    expect(card.checkout_url).to.equal(`${edge}/checkout/${card.id}`);
    expect((await client.get(`/v1/payments/${card.id}`)).body.id).to.equal(card.id);
    const missing = await client.get('/v1/payments/pay_00000000-0000-4000-8000-000000000000');
    expect(missing.status).to.equal(404);
    expect(answers.map((a) => a.status)).to.deep.equal([201, 200, 404]);
    expect(
      answers.every((a) => a.hsts === HSTS && a.protocol === 'TLSv1.3'),
      JSON.stringify(answers),
    ).to.equal(true);

    const page = await secure(card.checkout_url);
    expect(page.status).to.equal(200);
    expect(page.headers.get('strict-transport-security')).to.equal(HSTS);
  });

  it('answers 503 service-unavailable with Retry-After and the error body when no node is ready', async () => {
    const down = { ...topologyAt(await freeBase(), 1), dir: mkdtempSync(path.join(tmpdir(), 'svc-edge-down-')) };
    down.nodes[0] = { ...down.nodes[0], web: await freePort() }; // nothing listens there
    startHaproxy(down);
    try {
      await waitFor('HAProxy', () => portOpen(down.haproxyPort), 10_000);
      const res = await fetchTrusting(ca)(`https://127.0.0.1:${down.haproxyPort}/v1/payments`);
      expect(res.status).to.equal(503);
      expect(res.headers.get('retry-after')).to.equal('5');
      expect(res.headers.get('strict-transport-security')).to.equal(HSTS);
      const body = (await res.json()) as { error: { code: string; request_id: string } };
      expect(body.error).to.include({ code: 'service-unavailable' });
      expect(body.error.request_id).to.match(/^req_[0-9a-f-]{36}$/);
    } finally {
      stopHaproxy(down);
      rmSync(down.dir, { recursive: true, force: true });
    }
  });

  it('redirects plain HTTP to HTTPS (308, same path and query), except /health/* on the internal port', async () => {
    const plain = `http://127.0.0.1:${t.haproxyHttpPort}`;
    for (const p of ['/v1/payments?limit=2', '/checkout/pay_x', '/admin/merchants', '/']) {
      const res = await fetch(plain + p, { redirect: 'manual' });
      expect(res.status, p).to.equal(308);
      expect(res.headers.get('location'), p).to.equal(`${edge}${p}`);
    }
    const post = await fetch(`${plain}/v1/payments`, {
      method: 'POST',
      body: '{}',
      headers: { 'Content-Type': 'application/json' },
      redirect: 'manual',
    });
    expect(post.status, 'a POST is redirected, never served in clear').to.equal(308);
    for (const p of ['/health/live', '/health/ready']) {
      const res = await fetch(plain + p, { redirect: 'manual' });
      expect(res.status, p).to.equal(200);
    }
  });
});
