import type { Config } from '../config';
import { OPERATORS, type Direction, type Environment, type Operator } from '../vocabulary';
import { HttpClient } from '../httpClient';
import type { Logger } from '../logger';
import { CardSandboxConnector, CARD_SANDBOX_ID } from './cardSandbox/connector';
import type { CardConnector } from './cardConnector';
import type { Connector, ProviderEndpoint } from './connector';
import { SandboxConnector } from './sandbox/connector';
import { AirtelConnector } from './airtel/connector';
import { MpgsConnector } from './mpgs/connector';
import { PawapayConnector } from './pawapay/connector';
import { CONNECTOR_NAMES, CONNECTORS, type ConnectorName, type ConnectorSettings } from './table';

/** What every connector is built with beside its own settings. */
export interface ConnectorCommon {
  timeoutMs: number;
  /** the connections it calls over (one client per registry) */
  client: HttpClient;
  /** where a provider must send its callbacks for the provider id `id`: {BASE_URL}/callbacks/{id} */
  callbackUrl: (id: string) => string;
  /** the service's public URL (BASE_URL): where a card connector's 3-D Secure returns the client */
  serviceUrl: string;
  log?: Logger;
}

/** What a table entry builds: mobile-money connectors, or card connectors. */
type Built<N extends ConnectorName> = (typeof CONNECTORS)[N]['method'] extends 'card' ? CardConnector : Connector;

/**
 * How each entry of the connector table (./table.ts) is built from its settings: one line per
 * entry, and the type checker refuses an entry without one. A connector is built only when its
 * settings are configured (not null).
 */
export const CONNECTOR_FACTORIES: {
  [N in ConnectorName]: (settings: NonNullable<ConnectorSettings[N]>, common: ConnectorCommon) => Built<N>[];
} = {
  sandbox: (s, common) =>
    OPERATORS.map((operator) => {
      const id = sandboxIdFor(operator);
      return new SandboxConnector({
        id,
        connector: 'sandbox',
        environment: 'test',
        operator,
        url: `${s.url}/${operator}`,
        apiKey: s.apiKey,
        callbackSecret: s.callbackSecret,
        callbackUrl: common.callbackUrl(id),
        timeoutMs: common.timeoutMs,
        client: common.client,
      });
    }),
  'card-sandbox': (s, common) => [
    new CardSandboxConnector({
      id: CARD_SANDBOX_ID,
      connector: 'card-sandbox',
      environment: 'test',
      url: s.providerUrl,
      vaultUrl: s.vaultUrl,
      apiKey: s.apiKey,
      callbackSecret: s.callbackSecret,
      callbackUrl: common.callbackUrl(CARD_SANDBOX_ID),
      serviceUrl: common.serviceUrl,
      timeoutMs: common.timeoutMs,
      client: common.client,
    }),
  ],
  pawapay: (s, common) => [
    new PawapayConnector({
      environment: 'live',
      baseUrl: s.url,
      apiToken: s.apiToken,
      callbackSignatures: s.callbackSignatures,
      // its signature covers the URL it posted to: the one registered with pawaPay
      callbackUrl: common.callbackUrl('pawapay'),
      timeoutMs: common.timeoutMs,
      client: common.client,
      log: common.log,
    }),
  ],
  airtel: (s, common) => [
    new AirtelConnector({
      environment: 'live',
      baseUrl: s.url,
      clientId: s.clientId,
      clientSecret: s.clientSecret,
      country: s.country,
      disbursementPin: s.disbursementPin ?? undefined,
      pinPublicKeyPem: s.pinPublicKey ?? undefined,
      pinPadding: s.pinPadding ?? undefined,
      callbackHashSecret: s.callbackHashSecret ?? undefined,
      callbackHashOver: s.callbackHashOver,
      disbursementVersion: s.disbursementVersion,
      idFormat: s.idFormat,
      amountRules: s.amountLimits,
      timeoutMs: common.timeoutMs,
      client: common.client,
      log: common.log,
    }),
  ],
  mpgs: (s, common) => [
    new MpgsConnector({ settings: s, client: common.client, serviceUrl: common.serviceUrl, log: common.log }),
  ],
};

/**
 * The routing table (docs/decisions.md#live-providers, docs/adding-a-connector.md): (environment,
 * method, direction) → connector. Test keys reach the sandboxes: the mobile-money sandbox of the
 * operator (ids `<operator>-sandbox`) and the card sandbox (`card-sandbox`). Live keys reach the
 * connector configured for the operator's direction (LIVE_<OPERATOR>) or for cards (LIVE_CARD),
 * named after its provider (`pawapay`, `airtel`): an aggregator serves several operators with one
 * account and one callback URL; none configured, the method is closed in live. Sandbox and live
 * connectors have distinct ids, so a callback verified by a sandbox's scheme can only ever decide
 * a test object. Each process builds one, in its service context (shared/context.ts).
 */
export class ProviderRegistry {
  private readonly byId = new Map<string, ProviderEndpoint>();
  private readonly mobileMoney: Connector[] = [];
  private readonly cards: CardConnector[] = [];
  private readonly routes: Config['routes'];

  constructor(config: Config, log?: Logger) {
    this.routes = config.routes;
    const common: ConnectorCommon = {
      timeoutMs: config.payments.providerTimeoutMs,
      client: new HttpClient(),
      callbackUrl: (id) => `${config.baseUrl}/callbacks/${id}`,
      serviceUrl: config.baseUrl,
      log,
    };
    for (const name of CONNECTOR_NAMES) {
      const settings = config.connectors[name];
      if (settings === null) continue;
      const build = CONNECTOR_FACTORIES[name] as (s: unknown, c: ConnectorCommon) => (Connector | CardConnector)[];
      for (const built of build(settings, common)) {
        this.byId.set(built.id, built);
        if (CONNECTORS[name].method === 'card') this.cards.push(built as CardConnector);
        else this.mobileMoney.push(built as Connector);
      }
    }
  }

  /** The provider with this id, if configured (a payment's `provider`, the {provider} of /callbacks/{provider}). */
  byProviderId(id: string): ProviderEndpoint | undefined {
    return this.byId.get(id);
  }

  /** The mobile-money connector with this id (the one that handles an operation), if configured. */
  connector(id: string | null): Connector | undefined {
    return id ? this.mobileMoney.find((c) => c.id === id) : undefined;
  }

  /** The card connector with this id (a card payment's `provider`), if configured. */
  card(id: string | null): CardConnector | undefined {
    return id ? this.cards.find((c) => c.id === id) : undefined;
  }

  /** The connector that serves an operator's direction in an environment; undefined: none (closed in live). */
  route(environment: Environment, operator: Operator, direction: Direction): Connector | undefined {
    if (environment === 'test') return this.connector(sandboxIdFor(operator));
    const name = this.routes.mobileMoney[operator]?.[direction];
    const connector = this.connector(name ?? null);
    return connector &&
      connector.capabilities.directions.includes(direction) &&
      connector.capabilities.operators.includes(operator)
      ? connector
      : undefined;
  }

  /** The card connector of an environment: the card sandbox for test keys, LIVE_CARD's for live keys; undefined: none (closed in live). */
  cardRoute(environment: Environment): CardConnector | undefined {
    return this.card(environment === 'test' ? CARD_SANDBOX_ID : this.routes.card);
  }

  /** Every live mobile-money connector, for what providers say of their own availability. */
  liveConnectors(): Connector[] {
    return this.mobileMoney.filter((c) => c.environment === 'live');
  }

  /** Every connector built, whatever its method. */
  all(): ProviderEndpoint[] {
    return [...this.byId.values()];
  }

  close(): void {
    for (const c of [...this.mobileMoney, ...this.cards]) c.close?.();
  }
}

export const sandboxIdFor = (operator: Operator) => `${operator}-sandbox`;
