import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../shared/config';
import { metricsPortFor } from '../../shared/metrics/ports';

/** PORT_BASE moves every port the Procfile opens, and the URLs derived from them (docs/settings.md). */
describe('PORT_BASE', () => {
  const ports = (c: ReturnType<typeof loadConfig>) => ({
    port: c.port,
    adminPort: c.adminPort,
    baseUrl: c.baseUrl,
    sandbox: [c.connectors.sandbox.port, c.connectors.sandbox.url],
    vault: [c.connectors['card-sandbox'].vaultPort, c.connectors['card-sandbox'].vaultUrl],
    acquirer: [c.connectors['card-sandbox'].providerPort, c.connectors['card-sandbox'].providerUrl],
  });

  it('unset: each port keeps its own default', () => {
    expect(ports(loadConfig({}))).to.deep.equal({
      port: 3000,
      adminPort: null,
      baseUrl: 'http://127.0.0.1:3000',
      sandbox: [4010, 'http://127.0.0.1:4010'],
      vault: [4020, 'http://127.0.0.1:4020'],
      acquirer: [4030, 'http://127.0.0.1:4030'],
    });
    expect(metricsPortFor('provider-push', {})).to.equal(null);
  });

  it('6000: the API at 6000, the sandbox provider 6010, the card vault 6020, the acquirer 6030, and their URLs', () => {
    expect(ports(loadConfig({ PORT_BASE: '6000' }))).to.deep.equal({
      port: 6000,
      adminPort: null,
      baseUrl: 'http://127.0.0.1:6000',
      sandbox: [6010, 'http://127.0.0.1:6010'],
      vault: [6020, 'http://127.0.0.1:6020'],
      acquirer: [6030, 'http://127.0.0.1:6030'],
    });
  });

  it('moves the admin and metrics ports when they are turned on as +N; metrics stay off unless set', () => {
    const env = { PORT_BASE: '6000', ADMIN_PORT: '+1', METRICS_PORT_BASE: '+100' };
    expect(loadConfig(env).adminPort).to.equal(6001);
    expect(metricsPortFor('provider-push', env)).to.equal(6120);
    expect(metricsPortFor('provider-push', { PORT_BASE: '6000' })).to.equal(null);
  });

  it('a port or URL set outright wins', () => {
    const c = loadConfig({
      PORT_BASE: '6000',
      PORT: '7000',
      ADMIN_PORT: '7001',
      BASE_URL: 'https://pay.example.com',
      SANDBOX_PROVIDER_URL: 'http://sandbox.internal:80',
      CARD_VAULT_PORT: '7020',
    });
    expect(ports(c)).to.deep.equal({
      port: 7000,
      adminPort: 7001,
      baseUrl: 'https://pay.example.com',
      sandbox: [6010, 'http://sandbox.internal:80'],
      vault: [7020, 'http://127.0.0.1:7020'],
      acquirer: [6030, 'http://127.0.0.1:6030'],
    });
    expect(metricsPortFor('provider-push', { PORT_BASE: '6000', METRICS_PORT_BASE: '9400' })).to.equal(9420);
  });

  it('refuses a bad base, and +N without PORT_BASE or too far above it', () => {
    for (const env of [
      { PORT_BASE: 'x' },
      { PORT_BASE: '0' },
      { PORT_BASE: '65000' },
      { ADMIN_PORT: '+1' },
      { PORT_BASE: '6000', ADMIN_PORT: '+1000' },
      { PORT_BASE: '6000', ADMIN_PORT: '+x' },
      { PORT_BASE: '6000', ADMIN_PORT: '+0' },
    ])
      expect(() => loadConfig(env), JSON.stringify(env)).to.throw(ConfigError);
    expect(() => metricsPortFor('provider-push', { METRICS_PORT_BASE: '+100' })).to.throw(/PORT_BASE/);
  });
});
