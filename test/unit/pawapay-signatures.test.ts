import { expect } from 'chai';
import { createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { HttpAnswer, HttpCall, HttpClient } from '../../shared/httpClient';
import { PawapayConnector } from '../../shared/providers/pawapay/connector';
import {
  contentDigest,
  signMessage,
  verifyEcdsa,
  verifySignedMessage,
  type VerifyRequest,
} from '../../shared/providers/pawapay/signatures';

const URL_ = 'https://merchant.example/callbacks/pawapay';
const BODY = JSON.stringify({
  depositId: '0b6e8f4e-3c1d-4a52-9f1e-2d7c5b8a9e10',
  status: 'COMPLETED',
  amount: '100.00',
  currency: 'CDF',
});
const NOW = 1_800_000_000;

function keyPair() {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' });
}

async function signed(privateKey: KeyObject, over: Partial<Parameters<typeof signMessage>[0]> = {}) {
  return signMessage({ privateKey, keyId: 'key-1', url: URL_, body: BODY, created: NOW, ...over });
}

function request(headers: Record<string, string>, over: Partial<VerifyRequest> = {}): VerifyRequest {
  return { raw: Buffer.from(BODY), headers, method: 'POST', url: URL_, nowUnix: NOW, maxSkewSec: 300, ...over };
}

describe('pawaPay callback signatures (RFC 9421, RFC 9530)', () => {
  const { privateKey, publicKey } = keyPair();
  const other = keyPair();
  const lookup = async (id: string) => (id === 'key-1' ? publicKey : undefined);

  it('verifies a DER signature (as pawaPay signs) over the digest, method, authority and path', async () => {
    const headers = await signed(privateKey);
    expect(headers['signature-input']).to.match(
      /^sig-pp=\("@method" "@authority" "@path" "signature-date" "content-digest" "content-type"\);created=1800000000;expires=1800000060;keyid="key-1";alg="ecdsa-p256-sha256"$/,
    );
    expect(headers['content-digest']).to.equal(contentDigest(BODY, 'sha-512'));
    const sig = Buffer.from(/^sig-pp=:(.*):$/.exec(headers.signature)![1], 'base64');
    expect(sig[0]).to.equal(0x30); // a DER SEQUENCE
    expect(await verifySignedMessage(request(headers), lookup)).to.deep.equal({ ok: true, keyid: 'key-1' });
  });

  it('verifies a raw r‖s signature and a sha-256 digest', async () => {
    const headers = await signed(privateKey, { encoding: 'raw', digest: 'sha-256' });
    const sig = Buffer.from(/^sig-pp=:(.*):$/.exec(headers.signature)![1], 'base64');
    expect(sig.length).to.equal(64);
    expect(headers['content-digest']).to.match(/^sha-256=:/);
    expect((await verifySignedMessage(request(headers), lookup)).ok).to.equal(true);
  });

  it('verifyEcdsa takes either encoding, and refuses another key or other data', () => {
    const data = Buffer.from('base');
    const der = createSign('sha256').update(data).sign(privateKey);
    const raw = createSign('sha256').update(data).sign({ key: privateKey, dsaEncoding: 'ieee-p1363' });
    expect(verifyEcdsa(publicKey, data, der)).to.equal(true);
    expect(verifyEcdsa(publicKey, data, raw)).to.equal(true);
    expect(verifyEcdsa(other.publicKey, data, der)).to.equal(false);
    expect(verifyEcdsa(publicKey, Buffer.from('other'), raw)).to.equal(false);
    expect(verifyEcdsa(publicKey, data, Buffer.from('junk'))).to.equal(false);
  });

  it('refuses an altered body (the digest no longer matches)', async () => {
    const headers = await signed(privateKey);
    const out = await verifySignedMessage(
      request(headers, { raw: Buffer.from(BODY.replace('100.00', '900.00')) }),
      lookup,
    );
    expect(out).to.deep.equal({ ok: false, reason: 'Content-Digest sha-512 does not match the body' });
  });

  it('refuses a digest replaced to match an altered body (the signature covers the digest)', async () => {
    const headers = await signed(privateKey);
    const altered = BODY.replace('100.00', '900.00');
    const out = await verifySignedMessage(
      request({ ...headers, 'content-digest': contentDigest(altered, 'sha-512') }, { raw: Buffer.from(altered) }),
      lookup,
    );
    expect(out).to.deep.equal({ ok: false, reason: 'sig-pp: signature does not verify' });
  });

  it('refuses a wrong, missing or unknown-algorithm digest', async () => {
    const headers = await signed(privateKey);
    expect(
      (await verifySignedMessage(request({ ...headers, 'content-digest': contentDigest('{}', 'sha-512') }), lookup)).ok,
    ).to.equal(false);
    const { ['content-digest']: _drop, ...noDigest } = headers;
    expect(await verifySignedMessage(request(noDigest), lookup)).to.deep.equal({
      ok: false,
      reason: 'no Content-Digest',
    });
    expect(await verifySignedMessage(request({ ...headers, 'content-digest': 'md5=:AAAA:' }), lookup)).to.deep.equal({
      ok: false,
      reason: 'Content-Digest has no sha-256 or sha-512',
    });
  });

  it('refuses a signature that does not cover the digest', async () => {
    const headers = await signed(privateKey, { fields: ['@method', '@path', 'content-type'] });
    expect(await verifySignedMessage(request(headers), lookup)).to.deep.equal({
      ok: false,
      reason: 'sig-pp: content-digest not signed',
    });
  });

  it('refuses a stale or future created time (more than 300 s from the service clock) and an expired one', async () => {
    const headers = await signed(privateKey, { expiresIn: 3600 });
    expect((await verifySignedMessage(request(headers, { nowUnix: NOW + 300 }), lookup)).ok).to.equal(true);
    expect((await verifySignedMessage(request(headers, { nowUnix: NOW - 300 }), lookup)).ok).to.equal(true);
    expect(await verifySignedMessage(request(headers, { nowUnix: NOW + 301 }), lookup)).to.deep.equal({
      ok: false,
      reason: 'sig-pp: created 301 s from now',
    });
    expect((await verifySignedMessage(request(headers, { nowUnix: NOW - 301 }), lookup)).ok).to.equal(false);
    const short = await signed(privateKey, { expiresIn: 10 });
    expect(await verifySignedMessage(request(short, { nowUnix: NOW + 11 }), lookup)).to.deep.equal({
      ok: false,
      reason: 'sig-pp: expired',
    });
  });

  it('refuses another key, an unknown keyid, a forged signature, another URL, and missing headers', async () => {
    const forged = await signed(other.privateKey);
    expect(await verifySignedMessage(request(forged), lookup)).to.deep.equal({
      ok: false,
      reason: 'sig-pp: signature does not verify',
    });
    const unknown = await signed(privateKey, { keyId: 'key-9' });
    expect(await verifySignedMessage(request(unknown), lookup)).to.deep.equal({
      ok: false,
      reason: 'sig-pp: unknown keyid',
    });
    const headers = await signed(privateKey);
    expect(
      (await verifySignedMessage(request(headers, { url: 'https://merchant.example/callbacks/other' }), lookup)).ok,
    ).to.equal(false);
    expect(
      (await verifySignedMessage(request(headers, { url: 'https://evil.example/callbacks/pawapay' }), lookup)).ok,
    ).to.equal(false);
    const { signature: _s, ...noSignature } = headers;
    expect(await verifySignedMessage(request(noSignature), lookup)).to.deep.equal({
      ok: false,
      reason: 'no Signature or Signature-Input',
    });
    expect((await verifySignedMessage(request({ ...headers, signature: 'garbage(((' }), lookup)).ok).to.equal(false);
  });
});

/** An HttpClient that serves the public-key endpoint from a list that can change, and counts the fetches. */
function keyServer(initial: { id: string; key: KeyObject }[]) {
  const state = { keys: initial, fetches: 0, paths: [] as string[] };
  const client = {
    async request(url: string, call: HttpCall): Promise<HttpAnswer> {
      const path = new URL(url).pathname;
      state.paths.push(`${call.method} ${path}`);
      if (path === '/v2/public-key/http') {
        state.fetches++;
        const body = state.keys.map(({ id, key }) => ({
          id,
          key: key.export({ type: 'spki', format: 'pem' }).toString(),
        }));
        return { status: 200, headers: {}, body: Buffer.from(JSON.stringify(body)) };
      }
      return { status: 404, headers: {}, body: Buffer.alloc(0) };
    },
    close() {},
  };
  return { state, client: client as unknown as HttpClient };
}

describe('PawapayConnector.verifyCallback: keys from GET /v2/public-key/http', () => {
  const a = keyPair();
  const b = keyPair();
  let clock = 1_000_000;

  function connector(client: HttpClient, over: Partial<ConstructorParameters<typeof PawapayConnector>[0]> = {}) {
    return new PawapayConnector({
      environment: 'live',
      baseUrl: 'http://pawapay.invalid',
      apiToken: 'tok',
      callbackSignatures: 'required',
      callbackUrl: URL_,
      timeoutMs: 1000,
      client,
      activeConfRefreshMs: 0,
      keyRefetchMinMs: 60_000,
      now: () => clock,
      ...over,
    });
  }

  const callback = async (privateKey: KeyObject, keyId: string, nowUnix = NOW) => ({
    raw: Buffer.from(BODY),
    headers: await signMessage({ privateKey, keyId, url: URL_, body: BODY, created: NOW, expiresIn: 600 }),
    ip: '127.0.0.1',
    nowUnix,
  });

  it('fetches the keys once, caches them, and fetches again when a keyid is unknown (a rotated key)', async () => {
    const srv = keyServer([{ id: 'A', key: a.publicKey }]);
    const c = connector(srv.client);
    expect(await c.verifyCallback(await callback(a.privateKey, 'A'))).to.equal('verified');
    expect(await c.verifyCallback(await callback(a.privateKey, 'A'))).to.equal('verified');
    expect(srv.state.fetches).to.equal(1);
    srv.state.keys = [{ id: 'B', key: b.publicKey }];
    clock += 60_000;
    expect(await c.verifyCallback(await callback(b.privateKey, 'B'))).to.equal('verified');
    expect(srv.state.fetches).to.equal(2);
  });

  it('rate-limits the refetch: a flood of unknown keyids costs one fetch per period', async () => {
    const srv = keyServer([{ id: 'A', key: a.publicKey }]);
    const c = connector(srv.client);
    expect(await c.verifyCallback(await callback(a.privateKey, 'A'))).to.equal('verified');
    const flood = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => c.verifyCallback(await callback(b.privateKey, `X${i}`))),
    );
    expect(flood.every((v) => v === 'invalid')).to.equal(true);
    expect(srv.state.fetches).to.equal(1);
    clock += 60_000;
    expect(await c.verifyCallback(await callback(b.privateKey, 'X99'))).to.equal('invalid');
    expect(srv.state.fetches).to.equal(2);
    expect(await c.verifyCallback(await callback(b.privateKey, 'X100'))).to.equal('invalid');
    expect(srv.state.fetches).to.equal(2);
  });

  it("with signatures 'off' answers unsigned without a look at the headers; 'required' refuses a stale or unsigned callback", async () => {
    const srv = keyServer([{ id: 'A', key: a.publicKey }]);
    expect(
      await connector(srv.client, { callbackSignatures: 'off' }).verifyCallback({
        raw: Buffer.from(BODY),
        headers: {},
        ip: '127.0.0.1',
        nowUnix: NOW,
      }),
    ).to.equal('unsigned');
    expect(srv.state.fetches).to.equal(0);
    const c = connector(srv.client);
    expect(await c.verifyCallback({ raw: Buffer.from(BODY), headers: {}, ip: '127.0.0.1', nowUnix: NOW })).to.equal(
      'invalid',
    );
    expect(await c.verifyCallback(await callback(a.privateKey, 'A', NOW + 301))).to.equal('invalid');
    expect(await c.verifyCallback(await callback(a.privateKey, 'A', NOW + 299))).to.equal('verified');
  });
});
