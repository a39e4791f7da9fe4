import { expect } from 'chai';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { ConfigError, loadConfig } from '../../shared/config';
import type { HttpClient } from '../../shared/httpClient';
import { callbackHash } from '../../shared/providers/airtel/callbackHash';
import type { AirtelConnector } from '../../shared/providers/airtel/connector';
import { ProviderError } from '../../shared/providers/errors';
import { CONNECTOR_FACTORIES } from '../../shared/providers/registry';

/**
 * The Airtel settings of docs/settings.md, each from the environment to what the connector sends
 * or accepts: a stand-in HTTP client records the requests and answers as Airtel does.
 */
describe('Airtel settings', () => {
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
  const BASE = {
    AIRTEL_URL: 'https://openapiuat.airtel.africa',
    AIRTEL_CLIENT_ID: 'id',
    AIRTEL_CLIENT_SECRET: 'secret',
    AIRTEL_DISBURSEMENT_PIN: '2468',
    AIRTEL_PIN_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'pem' }).toString().replace(/\n/g, '\\n'),
    AIRTEL_CALLBACK_HASH_SECRET: 'hash-key',
  };

  function build(env: Record<string, string>) {
    const sent: { method: string; path: string; body: any }[] = [];
    const client = {
      request: (url: string, o: { method: string; body?: string }) => {
        const path = new URL(url).pathname;
        sent.push({ method: o.method, path, body: o.body ? JSON.parse(o.body) : undefined });
        const json = path.startsWith('/auth/')
          ? { access_token: 'token', expires_in: '180', token_type: 'bearer' }
          : {
              data: {
                transaction: { id: 'x', airtel_money_id: 'MP1', status: path.includes('disb') ? 'TS' : 'SUCCESS' },
              },
              status: { code: '200', message: 'ok', result_code: 'ESB000010', success: true },
            };
        return Promise.resolve({ status: 200, headers: {}, body: Buffer.from(JSON.stringify(json)) });
      },
    } as unknown as HttpClient;
    const settings = loadConfig({ ...BASE, ...env }).connectors.airtel!;
    const [connector] = CONNECTOR_FACTORIES.airtel(settings, {
      timeoutMs: 1000,
      client,
      callbackUrl: (id) => `http://127.0.0.1/callbacks/${id}`,
      serviceUrl: 'http://127.0.0.1',
    }) as AirtelConnector[];
    return { connector, sent: () => sent.filter((s) => !s.path.startsWith('/auth/')) };
  }
  const push = (amount = 1_000) => ({
    paymentId: `pay_${randomUUID()}`,
    operator: 'airtel' as const,
    amount,
    currency: 'USD' as const,
    msisdn: '243970000001',
    description: 'Order 42',
  });
  const payout = () => ({
    payoutId: `po_${randomUUID()}`,
    operator: 'airtel' as const,
    amount: 1_000,
    currency: 'USD' as const,
    msisdn: '243970000001',
    description: 'Salary',
  });

  it('AIRTEL_ID_FORMAT: compact (default) sends P + 32 hex digits; ours sends our payment id', async () => {
    const compact = build({});
    const req = push();
    await compact.connector.push(req);
    expect(compact.sent()[0].body.transaction.id).to.equal(`P${req.paymentId.slice(4).replace(/-/g, '')}`);
    const ours = build({ AIRTEL_ID_FORMAT: 'ours' });
    const again = push();
    await ours.connector.push(again);
    expect(ours.sent()[0].body.transaction.id).to.equal(again.paymentId);
  });

  it('AIRTEL_DISBURSEMENT_VERSION: v2 (default) posts to /standard/v2 with wallet_type and type; v1 to /standard/v1 without', async () => {
    const v2 = build({});
    await v2.connector.payout(payout());
    expect(v2.sent()[0].path).to.equal('/standard/v2/disbursements/');
    expect(v2.sent()[0].body.payee).to.have.property('wallet_type', 'NORMAL');
    expect(v2.sent()[0].body.transaction).to.have.property('type', 'B2C');
    const v1 = build({ AIRTEL_DISBURSEMENT_VERSION: 'v1' });
    await v1.connector.payout(payout());
    expect(v1.sent()[0].path).to.equal('/standard/v1/disbursements/');
    expect(v1.sent()[0].body.payee).to.not.have.property('wallet_type');
    expect(v1.sent()[0].body.transaction).to.not.have.property('type');
  });

  it('AIRTEL_CALLBACK_HASH_OVER: request (default) or transaction decides which hash verifies', async () => {
    const body = {
      transaction: { id: `P${'0'.repeat(32)}`, message: 'paid', status_code: 'TS', airtel_money_id: 'MP1' },
    };
    const verify = (c: AirtelConnector, over: 'request' | 'transaction') =>
      c.verifyCallback({
        raw: Buffer.from(JSON.stringify({ ...body, hash: callbackHash('hash-key', body, over) })),
        headers: {},
        ip: '127.0.0.1',
        nowUnix: 0,
      });
    const byDefault = build({}).connector;
    expect([await verify(byDefault, 'request'), await verify(byDefault, 'transaction')]).to.deep.equal([
      'verified',
      'invalid',
    ]);
    const overTransaction = build({ AIRTEL_CALLBACK_HASH_OVER: 'transaction' }).connector;
    expect([await verify(overTransaction, 'request'), await verify(overTransaction, 'transaction')]).to.deep.equal([
      'invalid',
      'verified',
    ]);
  });

  it("AIRTEL_<CURRENCY>_MIN/_MAX: the contract's limits replace the placeholders; outside them nothing is sent", async () => {
    const placeholders = build({}).connector;
    expect(placeholders.capabilities.amountRule('airtel', 'USD', 'collection')).to.deep.equal({
      decimals: 2,
      min: 10,
      max: 250_000,
    });
    const { connector, sent } = build({ AIRTEL_USD_MIN: '500', AIRTEL_USD_MAX: '100000', AIRTEL_CDF_MAX: '9000000' });
    expect(connector.capabilities.amountRule('airtel', 'USD', 'payout')).to.deep.equal({
      decimals: 2,
      min: 500,
      max: 100_000,
    });
    expect(connector.capabilities.amountRule('airtel', 'CDF', 'collection')).to.deep.equal({
      decimals: 2,
      min: 10_000,
      max: 9_000_000,
    });
    for (const amount of [499, 100_001]) {
      const err = await connector.push(push(amount)).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(ProviderError).and.include({ code: 'amount-out-of-bounds', retryable: false });
    }
    expect(sent()).to.have.length(0);
    await connector.push(push(500));
    expect(sent()).to.have.length(1);
  });

  it('refuses a bad value, a minimum above the maximum, and any of them without the Airtel connection', () => {
    for (const env of [
      { ...BASE, AIRTEL_ID_FORMAT: 'uuid' },
      { ...BASE, AIRTEL_DISBURSEMENT_VERSION: 'v3' },
      { ...BASE, AIRTEL_CALLBACK_HASH_OVER: 'body' },
      { ...BASE, AIRTEL_USD_MIN: '0' },
      { ...BASE, AIRTEL_CDF_MIN: '10', AIRTEL_CDF_MAX: '9' },
      { AIRTEL_USD_MAX: '100000' },
      { AIRTEL_DISBURSEMENT_VERSION: 'v1' },
    ])
      expect(() => loadConfig(env), JSON.stringify(env)).to.throw(ConfigError);
  });
});
