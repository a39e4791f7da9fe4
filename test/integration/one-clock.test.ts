import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { signRequest } from '../../shared/client/signing';
import { IDEMPOTENCY_WINDOW_MS, purgeExpiredIdempotencyKeys } from '../../shared/idempotency';
import { purgeExpiredSignatures } from '../../shared/requestSignatures';
import { TIMESTAMP_TOLERANCE_S } from '../../api/pipeline/signed';
import type { MerchantFixture, TestEnv } from '../helpers/env';
import { send } from '../helpers/http';
import {
  aMerchant,
  aSucceededPayment,
  callbackBody,
  mobilePayment,
  sendCallback,
  startMoneyEnv,
} from '../helpers/money';

/**
 * One clock for every freshness rule (docs/decisions.md#clock): the service's (shared/clock.ts;
 * here the file clock of test/helpers/env.ts, shared by the in-process app and the spawned
 * sandbox and pools). The clock is moved past the 300 s tolerance, and each rule follows it,
 * none follows the wall clock: a merchant's X-Timestamp, a provider callback's signature (the
 * sandbox signs by its clock, the service checks by its own), the record of a used signature, and
 * the 24 h window of an Idempotency-Key.
 */
describe('one clock: every freshness rule follows the service clock', function () {
  this.timeout(60_000);
  let env: TestEnv;
  let shop: MerchantFixture;
  const PAST_TOLERANCE_MS = (TIMESTAMP_TOLERANCE_S + 1) * 1000;
  const wallS = () => Math.floor(Date.now() / 1000);
  const serviceS = () => Math.floor(env.clock.now() / 1000);

  /** POST /v1/payments signed at `ts` (Unix seconds), under `key`. */
  function signedPayment(ts: number, key: string, body = JSON.stringify(mobilePayment('243990000001'))) {
    const headers = {
      Authorization: `Bearer ${shop.credential.api_key}`,
      'Content-Type': 'application/json',
      'Idempotency-Key': key,
      'X-Timestamp': String(ts),
      'X-Signature': signRequest(shop.credential.secret, String(ts), 'POST', '/v1/payments', body),
    };
    return {
      headers,
      body,
      send: (h: Record<string, string> = {}) => send(env.baseUrl, 'POST', '/v1/payments', { ...headers, ...h }, body),
    };
  }

  before(async () => {
    env = await startMoneyEnv({}, ['workers/provider-push/index.ts', 'workers/callback-reconciler/index.ts']);
    shop = await aMerchant(env);
    env.clock.advance(PAST_TOLERANCE_MS);
    expect(serviceS() - wallS()).to.be.greaterThan(TIMESTAMP_TOLERANCE_S);
  });
  after(async () => env?.close());

  it("judges a merchant's X-Timestamp by the service clock", async () => {
    const byWall = await signedPayment(wallS(), randomUUID()).send();
    expect(byWall.status, byWall.text).to.equal(401);
    expect(byWall.body.error.code).to.equal('timestamp-expired');
    const byService = await signedPayment(serviceS(), randomUUID()).send();
    expect(byService.status, byService.text).to.equal(201);
  });

  it("checks a provider callback's signature by the service clock, and the sandbox signs by it", async () => {
    // the sandbox's own callback, signed by its clock (moved with the service's): the payment succeeds
    const payment = await aSucceededPayment(shop.client);
    expect(payment.status).to.equal('succeeded');
    const raw = callbackBody({ external_id: payment.id, status: 'succeeded' });
    const byWall = await sendCallback(env.baseUrl, 'vodacom-sandbox', raw, { timestamp: wallS() });
    expect(byWall.status, JSON.stringify(byWall.body)).to.equal(401);
    const byService = await sendCallback(env.baseUrl, 'vodacom-sandbox', raw, { timestamp: serviceS() });
    expect(byService.status, JSON.stringify(byService.body)).to.be.within(200, 299);
  });

  it("keeps a used signature's record while its timestamp is fresh by the service clock, then purges it", async () => {
    const request = signedPayment(serviceS(), randomUUID());
    expect((await request.send()).status).to.equal(201);
    const record = () =>
      env.services.db('request_signatures').where({ signature: request.headers['X-Signature'] }).first();
    expect(await record(), 'recorded').to.not.equal(undefined);
    // by Postgres's clock (the wall clock) it expired 301 s ago; by the service's it is fresh
    await purgeExpiredSignatures(env.services.db, env.clock.now());
    expect(await record(), 'kept while fresh').to.not.equal(undefined);
    const replayed = await request.send({ 'Idempotency-Key': randomUUID() });
    expect(replayed.body.error.code).to.equal('request-replayed');

    env.clock.advance(PAST_TOLERANCE_MS);
    const late = await request.send({ 'Idempotency-Key': randomUUID() });
    expect(late.body.error.code, 'the same bytes later: too old before they are a replay').to.equal(
      'timestamp-expired',
    );
    expect(await purgeExpiredSignatures(env.services.db, env.clock.now())).to.be.greaterThan(0);
    expect(await record(), 'purged').to.equal(undefined);
  });

  it("opens an Idempotency-Key's 24 h window at the service clock and closes it by that clock", async () => {
    const key = randomUUID();
    const first = await signedPayment(serviceS(), key).send();
    expect(first.status, first.text).to.equal(201);
    const row = await env.services.db('idempotency_keys').where({ key }).first();
    expect(
      Math.abs(row.created_at.getTime() - env.clock.now()),
      'created at the service clock, not at now()',
    ).to.be.below(5_000);
    expect(row.expires_at.getTime() - row.created_at.getTime()).to.equal(IDEMPOTENCY_WINDOW_MS);
    // the same key, another body: within the window, a conflict
    const conflict = await signedPayment(serviceS(), key).send();
    expect(conflict.body.error.code).to.equal('idempotency-conflict');

    env.clock.advance(IDEMPOTENCY_WINDOW_MS);
    // past the window by the service clock (not by Postgres's): the key is free for a new request
    const reused = await signedPayment(serviceS(), key).send();
    expect(reused.status, reused.text).to.equal(201);
    expect(reused.headers['idempotent-replayed']).to.equal(undefined);
    expect(reused.body.id).to.not.equal(first.body.id);
    // and an expired key is purged by that clock
    const other = randomUUID();
    expect((await signedPayment(serviceS(), other).send()).status).to.equal(201);
    await purgeExpiredIdempotencyKeys(env.services.db, env.clock.now()); // the keys of the earlier tests
    expect(await env.services.db('idempotency_keys').where({ key: other }), 'kept within its window').to.have.length(1);
    env.clock.advance(IDEMPOTENCY_WINDOW_MS + 1000);
    expect(await purgeExpiredIdempotencyKeys(env.services.db, env.clock.now())).to.be.greaterThan(0);
    expect(await env.services.db('idempotency_keys').where({ key: other })).to.have.length(0);
  });
});
