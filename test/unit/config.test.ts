import { expect } from 'chai';
import {
  ConfigError,
  DEV_ADMIN_API_TOKEN,
  DEV_CARD_CALLBACK_SECRET,
  DEV_SANDBOX_CALLBACK_SECRET,
  DEV_SECRETS_KEY,
  loadConfig,
  SPEC_WEBHOOK_DELAYS_S,
} from '../../shared/config';

const REAL_KEY = `k2:${Buffer.alloc(32, 7).toString('base64')}`;
/** Every secret production insists on, set to real values. */
const PROD = {
  NODE_ENV: 'production',
  SECRETS_KEY: REAL_KEY,
  ADMIN_API_TOKEN: 'a-real-production-token-of-32-chars',
  SANDBOX_CALLBACK_SECRET: 'a-real-sandbox-callback-secret',
  CARD_CALLBACK_SECRET: 'a-real-card-callback-secret',
  CARD_VAULT_API_KEY: 'a-real-card-vault-key',
};

describe('config', () => {
  it('has working development defaults', () => {
    const c = loadConfig({});
    expect(c.nodeEnv).to.equal('development');
    expect(c.port).to.equal(3000);
    expect(c.databaseUrl).to.equal('postgres://postgres@127.0.0.1:5432/svc_payments');
    expect(c.redisUrl).to.equal('redis://127.0.0.1:6379');
    expect(c.adminApiToken).to.equal(DEV_ADMIN_API_TOKEN);
    expect(c.secretsKeys).to.have.length(1);
    expect(c.webhookRetryDelaysMs).to.deep.equal(SPEC_WEBHOOK_DELAYS_S.map((s) => s * 1000));
  });

  it('refuses the development secrets key and admin token in production', () => {
    expect(() => loadConfig({ ...PROD, SECRETS_KEY: '' })).to.throw(ConfigError, /SECRETS_KEY/);
    expect(() => loadConfig({ ...PROD, ADMIN_API_TOKEN: '' })).to.throw(ConfigError, /ADMIN_API_TOKEN/);
    expect(() => loadConfig({ ...PROD, SECRETS_KEY: `${REAL_KEY},${DEV_SECRETS_KEY}` })).to.throw(
      ConfigError,
      /SECRETS_KEY/,
    );
    expect(loadConfig(PROD).nodeEnv).to.equal('production');
    // docs/decisions.md#operator-admin-api: the development token with spaces around it, or a short one, is refused too
    for (const token of [`${DEV_ADMIN_API_TOKEN} `, ` ${DEV_ADMIN_API_TOKEN}`, `${DEV_ADMIN_API_TOKEN}\t`]) {
      expect(() => loadConfig({ ...PROD, ADMIN_API_TOKEN: token })).to.throw(
        ConfigError,
        /development token is refused/,
      );
    }
    expect(() => loadConfig({ ...PROD, ADMIN_API_TOKEN: 'x'.repeat(31) })).to.throw(
      ConfigError,
      /at least 32 characters in production/,
    );
    expect(() => loadConfig({ ...PROD, ADMIN_API_TOKEN: `${'x'.repeat(31)}   ` })).to.throw(ConfigError, /at least 32/);
    expect(loadConfig({ ...PROD, ADMIN_API_TOKEN: 'x'.repeat(32) }).adminApiToken).to.equal('x'.repeat(32));
  });

  it('honours TEST_CLOCK_FILE (a clock tests move) with NODE_ENV=test only', () => {
    expect(loadConfig({ NODE_ENV: 'test', TEST_CLOCK_FILE: '/tmp/clock' }).testClockFile).to.equal('/tmp/clock');
    expect(loadConfig({ NODE_ENV: 'test' }).testClockFile).to.equal(null);
    expect(() => loadConfig({ ...PROD, TEST_CLOCK_FILE: '/tmp/clock' })).to.throw(
      ConfigError,
      /TEST_CLOCK_FILE.*production/,
    );
    expect(() => loadConfig({ TEST_CLOCK_FILE: '/tmp/clock' })).to.throw(ConfigError, /TEST_CLOCK_FILE.*development/);
  });

  it('refuses to start in production while a provider callback secret is a development default', () => {
    // unset: the sandbox (which serves test keys in production too) would verify with the public default
    expect(() => loadConfig({ ...PROD, SANDBOX_CALLBACK_SECRET: '' })).to.throw(ConfigError, /SANDBOX_CALLBACK_SECRET/);
    expect(() => loadConfig({ ...PROD, SANDBOX_CALLBACK_SECRET: DEV_SANDBOX_CALLBACK_SECRET })).to.throw(
      ConfigError,
      /SANDBOX_CALLBACK_SECRET/,
    );
    const live = loadConfig(PROD);
    expect(live.connectors.sandbox.callbackSecret).to.equal('a-real-sandbox-callback-secret');
    // development and test keep the default, so a laptop works out of the box
    expect(loadConfig({}).connectors.sandbox.callbackSecret).to.equal(DEV_SANDBOX_CALLBACK_SECRET);
  });

  it('live routing: LIVE_<OPERATOR> names a configured connector that reaches it; a half-configured connector refuses to start', () => {
    const pawapay = { PAWAPAY_URL: 'https://api.sandbox.pawapay.io', PAWAPAY_API_TOKEN: 'token' };
    const airtel = {
      AIRTEL_URL: 'https://openapiuat.airtel.africa',
      AIRTEL_CLIENT_ID: 'id',
      AIRTEL_CLIENT_SECRET: 'secret',
    };
    // nothing routed: every operator and cards are closed in live (test keys still reach the sandboxes)
    const none = loadConfig({});
    expect(none.routes).to.deep.equal({ mobileMoney: {}, card: null });
    expect(none.connectors).to.include({ pawapay: null, airtel: null });
    const both = loadConfig({
      ...pawapay,
      ...airtel,
      LIVE_VODACOM: 'pawapay',
      LIVE_ORANGE: 'pawapay',
      LIVE_AIRTEL: 'airtel',
      LIVE_AIRTEL_PAYOUT: 'pawapay',
    });
    expect(both.routes.mobileMoney).to.deep.equal({
      vodacom: { collection: 'pawapay', refund: 'pawapay', payout: 'pawapay' },
      orange: { collection: 'pawapay', refund: 'pawapay', payout: 'pawapay' },
      airtel: { collection: 'airtel', refund: 'airtel', payout: 'pawapay' },
    });
    expect(both.connectors.pawapay).to.deep.equal({
      url: 'https://api.sandbox.pawapay.io',
      apiToken: 'token',
      callbackSignatures: 'required',
    });
    expect(() => loadConfig({ PAWAPAY_URL: 'https://api.sandbox.pawapay.io' })).to.throw(
      ConfigError,
      /PAWAPAY_API_TOKEN/,
    );
    expect(() => loadConfig({ ...airtel, AIRTEL_CLIENT_SECRET: '' })).to.throw(ConfigError, /AIRTEL_CLIENT_SECRET/);
    expect(() => loadConfig({ ...airtel, AIRTEL_DISBURSEMENT_PIN: '1234' })).to.throw(
      ConfigError,
      /AIRTEL_PIN_PUBLIC_KEY/,
    );
    expect(() => loadConfig({ LIVE_VODACOM: 'pawapay' })).to.throw(ConfigError, /not configured/);
    expect(() => loadConfig({ ...airtel, LIVE_VODACOM: 'airtel' })).to.throw(
      ConfigError,
      /airtel does not reach vodacom/,
    );
    expect(() => loadConfig({ ...pawapay, LIVE_AFRICELL: 'pawapay' })).to.throw(
      ConfigError,
      /pawapay does not reach africell/,
    );
    expect(() => loadConfig({ ...pawapay, LIVE_VODACOM: 'mtn' })).to.throw(ConfigError, /LIVE_VODACOM must be one of/);
    expect(() => loadConfig({ ...airtel, LIVE_AIRTEL: 'airtel' })).to.throw(ConfigError, /Airtel payouts need/);
    expect(() => loadConfig({ ...PROD, ...pawapay, PAWAPAY_URL: 'http://api.sandbox.pawapay.io' })).to.throw(
      ConfigError,
      /PAWAPAY_URL/,
    );
    expect(() => loadConfig({ ...pawapay, PAWAPAY_CALLBACK_SIGNATURES: 'maybe' })).to.throw(
      ConfigError,
      /PAWAPAY_CALLBACK_SIGNATURES/,
    );
  });

  it('the card sandbox: its own ports and URLs; production refuses its development secrets; live cards only through LIVE_CARD', () => {
    const dev = loadConfig({});
    expect(dev.connectors['card-sandbox']).to.deep.include({
      vaultUrl: 'http://127.0.0.1:4020',
      providerUrl: 'http://127.0.0.1:4030',
      vaultPort: 4020,
      providerPort: 4030,
      callbackSecret: DEV_CARD_CALLBACK_SECRET,
    });
    expect(dev.cards).to.deep.equal({ threeDsWindowMs: 600_000, threeDsFirstAskMs: 60_000 });
    // live keys never reach the sandbox: no card route unless LIVE_CARD names a live card connector
    expect(dev.routes.card).to.equal(null);
    expect(loadConfig(PROD).routes.card).to.equal(null);
    expect(() => loadConfig({ LIVE_CARD: 'card-sandbox' })).to.throw(
      ConfigError,
      /LIVE_CARD must name a live card connector/,
    );
    expect(() => loadConfig({ LIVE_CARD: 'pawapay' })).to.throw(
      ConfigError,
      /LIVE_CARD must name a live card connector/,
    );
    expect(
      loadConfig({ CARD_VAULT_PORT: '5301', CARD_PROVIDER_PORT: '5302' }).connectors['card-sandbox'],
    ).to.deep.include({
      vaultUrl: 'http://127.0.0.1:5301',
      providerUrl: 'http://127.0.0.1:5302',
    });
    expect(() => loadConfig({ ...PROD, CARD_CALLBACK_SECRET: '' })).to.throw(ConfigError, /CARD_CALLBACK_SECRET/);
    expect(() => loadConfig({ ...PROD, CARD_CALLBACK_SECRET: DEV_SANDBOX_CALLBACK_SECRET })).to.throw(
      ConfigError,
      /CARD_CALLBACK_SECRET/,
    );
    expect(() => loadConfig({ ...PROD, CARD_VAULT_API_KEY: '' })).to.throw(ConfigError, /CARD_VAULT_API_KEY/);
  });

  it('reads WEB_CONCURRENCY (default 1) and ADMIN_PORT (default unset: the operator API shares PORT)', () => {
    expect(loadConfig({})).to.include({ webConcurrency: 1, adminPort: null });
    expect(loadConfig({ WEB_CONCURRENCY: '4', ADMIN_PORT: '3001' })).to.include({ webConcurrency: 4, adminPort: 3001 });
    expect(() => loadConfig({ WEB_CONCURRENCY: '0' })).to.throw(ConfigError, /WEB_CONCURRENCY must be between 1/);
    expect(() => loadConfig({ WEB_CONCURRENCY: 'two' })).to.throw(ConfigError, /WEB_CONCURRENCY must be an integer/);
    expect(() => loadConfig({ ADMIN_PORT: '70000' })).to.throw(ConfigError, /ADMIN_PORT must be between/);
    expect(() => loadConfig({ PORT: '3000', ADMIN_PORT: '3000' })).to.throw(
      ConfigError,
      /ADMIN_PORT must differ from PORT/,
    );
  });

  const bad: [string, Record<string, string>, RegExp][] = [
    ['a non-numeric port', { PORT: 'eighty' }, /PORT must be an integer/],
    ['a port out of range', { PORT: '70000' }, /PORT must be between/],
    ['an unknown NODE_ENV', { NODE_ENV: 'staging' }, /NODE_ENV/],
    ['a database URL of another kind', { DATABASE_URL: 'mysql://x@y/z' }, /DATABASE_URL must use/],
    ['a malformed Redis URL', { REDIS_URL: 'not a url' }, /REDIS_URL is not a valid URL/],
    ['a short secrets key', { SECRETS_KEY: `k:${Buffer.alloc(16).toString('base64')}` }, /32 bytes/],
    ['a secrets key without id', { SECRETS_KEY: Buffer.alloc(32).toString('base64') }, /SECRETS_KEY must be/],
    ['a short admin token', { ADMIN_API_TOKEN: 'short' }, /at least 16/],
    ['a webhook schedule of the wrong length', { WEBHOOK_RETRY_DELAYS_MS: '1,2,3' }, /8 comma-separated/],
  ];
  for (const [what, env, message] of bad) {
    it(`stops on ${what}`, () => {
      expect(() => loadConfig(env)).to.throw(ConfigError, message);
    });
  }

  it('accepts a shortened webhook schedule for tests but refuses it in production', () => {
    const short = '10,20,30,40,50,60,70,80';
    expect(loadConfig({ NODE_ENV: 'test', WEBHOOK_RETRY_DELAYS_MS: short }).webhookRetryDelaysMs).to.deep.equal([
      10, 20, 30, 40, 50, 60, 70, 80,
    ]);
    expect(() => loadConfig({ ...PROD, WEBHOOK_RETRY_DELAYS_MS: short })).to.throw(ConfigError, /may not shorten/);
  });

  it('reads rotated keys: the first encrypts, all decrypt', () => {
    const c = loadConfig({ SECRETS_KEY: `${REAL_KEY},${DEV_SECRETS_KEY}` });
    expect(c.secretsKeys.map((k) => k.id)).to.deep.equal(['k2', 'dev']);
  });

  it('reads ASK_INTERVAL_MS (default 5000) and refuses its old name RECONCILE_INTERVAL_MS rather than ignore it', () => {
    expect(loadConfig({}).askIntervalMs).to.equal(5000);
    expect(loadConfig({ ASK_INTERVAL_MS: '200' }).askIntervalMs).to.equal(200);
    expect(() => loadConfig({ RECONCILE_INTERVAL_MS: '200' })).to.throw(ConfigError, /ASK_INTERVAL_MS/);
  });
});
