import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../shared/config';
import { HttpClient } from '../../shared/httpClient';
import { CONNECTOR_LABELS, connectorLabel, operatorLabel } from '../../shared/metrics/providerCalls';
import { isCardConnector } from '../../shared/providers/cardConnector';
import type { Connector, ProviderEndpoint } from '../../shared/providers/connector';
import { CONNECTOR_FACTORIES, ProviderRegistry, type ConnectorCommon } from '../../shared/providers/registry';
import { CONNECTOR_NAMES, CONNECTORS, type ConnectorName } from '../../shared/providers/table';

/**
 * The connector table (shared/providers/table.ts, docs/adding-a-connector.md) is the one list of
 * connector names: every entry builds, each connector it builds carries its entry's name (its
 * metrics label, never `other`), and each live entry has what the checklist asks of it.
 */
const ROOT = path.join(__dirname, '..', '..');

// every live connector configured; no provider answers at this address (a connector that asks at start fails quietly)
const NOWHERE = 'http://127.0.0.1:1';
const EVERY_CONNECTOR = {
  PAWAPAY_URL: NOWHERE,
  PAWAPAY_API_TOKEN: 'token',
  AIRTEL_URL: NOWHERE,
  AIRTEL_CLIENT_ID: 'id',
  AIRTEL_CLIENT_SECRET: 'secret',
  MPGS_GATEWAY_URL: NOWHERE,
  MPGS_MERCHANT_ID: 'TESTMERCHANT',
  MPGS_API_PASSWORD: 'password',
  MPGS_NOTIFICATION_SECRET: 'notification-secret-0123456789',
};

describe('the connector table', () => {
  const config = loadConfig(EVERY_CONNECTOR);
  const common: ConnectorCommon = {
    timeoutMs: 100,
    client: new HttpClient(),
    callbackUrl: (id) => `http://127.0.0.1:3000/callbacks/${id}`,
    serviceUrl: 'http://127.0.0.1:3000',
  };
  const built = new Map<ConnectorName, ProviderEndpoint[]>();
  before(() => {
    for (const name of CONNECTOR_NAMES) {
      const settings = config.connectors[name];
      expect(settings, `${name}'s settings, configured for this test`).to.not.equal(null);
      const build = CONNECTOR_FACTORIES[name] as (s: unknown, c: ConnectorCommon) => ProviderEndpoint[];
      built.set(name, build(settings, common));
    }
  });
  after(() => {
    for (const endpoints of built.values()) for (const e of endpoints) (e as Connector).close?.();
  });

  it('builds every entry, each connector labelled with its entry name (never `other`)', () => {
    for (const name of CONNECTOR_NAMES) {
      const endpoints = built.get(name)!;
      expect(endpoints, name).to.not.be.empty;
      for (const e of endpoints) {
        expect(e.connector, `${e.id} was built by the entry ${name}`).to.equal(name);
        expect(connectorLabel(e), e.id).to.equal(name);
      }
    }
    expect([...CONNECTOR_LABELS].sort()).to.deep.equal([...CONNECTOR_NAMES].sort());
    // what the check guards against: a connector whose name is in no entry
    expect(connectorLabel({ connector: 'stripe' as ConnectorName, environment: 'live' })).to.equal('other');
  });

  it('builds card connectors for card entries and mobile-money connectors within their reach for the others', () => {
    for (const name of CONNECTOR_NAMES) {
      const entry = CONNECTORS[name];
      for (const e of built.get(name)!) {
        expect(e.environment, e.id).to.equal(entry.environment);
        expect(isCardConnector(e), e.id).to.equal(entry.method === 'card');
        if (entry.method === 'card') {
          expect(operatorLabel(e, null)).to.equal('card');
          continue;
        }
        const reach: readonly string[] = entry.reach;
        for (const op of (e as Connector).capabilities.operators) expect(reach, `${e.id} reaches ${op}`).to.include(op);
        // a live connector's provider id is its name: the value of its routing setting and its callback path
        if (entry.environment === 'live') expect(e.id).to.equal(name);
      }
    }
  });

  it('gives each entry its own settings loader in its folder, and each live one its README, schema and simulator script', () => {
    const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: object }).scripts;
    for (const name of CONNECTOR_NAMES) {
      const { folder, environment } = CONNECTORS[name];
      expect(existsSync(path.join(ROOT, folder, 'settings.ts')), `${folder}/settings.ts`).to.equal(true);
      if (environment !== 'live') continue;
      expect(existsSync(path.join(ROOT, folder, 'README.md')), `${folder}/README.md`).to.equal(true);
      expect(existsSync(path.join(ROOT, folder, 'schema')), `${folder}/schema/`).to.equal(true);
      expect(scripts, `npm run sim:${name}`).to.have.property(`sim:${name}`);
    }
  });

  it('routes by (environment, method, direction): sandboxes for test keys, only routed connectors for live keys', () => {
    const registry = new ProviderRegistry(loadConfig({ ...EVERY_CONNECTOR, LIVE_ORANGE: 'pawapay' }));
    try {
      expect(registry.route('test', 'orange', 'collection')?.id).to.equal('orange-sandbox');
      expect(registry.route('live', 'orange', 'payout')?.id).to.equal('pawapay');
      expect(registry.route('live', 'vodacom', 'collection')).to.equal(undefined);
      expect(registry.cardRoute('test')?.id).to.equal('card-sandbox');
      // no LIVE_CARD: the card sandbox never serves live keys
      expect(registry.cardRoute('live')).to.equal(undefined);
      expect(registry.card('card-sandbox')?.source.field).to.equal('token');
      expect(registry.connector('card-sandbox')).to.equal(undefined);
      expect(new Set(registry.all().map((e) => e.connector))).to.deep.equal(new Set(CONNECTOR_NAMES));
    } finally {
      registry.close();
    }
  });
});
