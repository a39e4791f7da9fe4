import type { Config, LiveConnectorName } from '../config';
import type { Direction, Environment, Operator } from '../vocabulary';
import { OPERATORS } from '../vocabulary';
import { cardAcquirerIdFor, HttpCardAcquirer } from './cardAcquirer';
import { SandboxConnector } from './http';
import type { Connector, ProviderEndpoint } from './connector';
import { HttpClient } from '../httpClient';
import type { Logger } from '../logger';
import { LIVE_CONNECTOR_FACTORIES } from './live';

/**
 * The routing table (docs/decisions.md#live-providers): (environment, operator, direction) →
 * connector. Test keys reach the sandbox connector of the operator (ids `<operator>-sandbox`),
 * live keys the connector configured for it (LIVE_<OPERATOR>, shared/config.ts), named after
 * its provider (`pawapay`, `airtel`): an aggregator serves several operators with one account
 * and one callback URL. Sandbox and live connectors have distinct ids, so a callback verified
 * by the sandbox's scheme can only ever decide a test object. Each process builds one, in its
 * service context (shared/context.ts).
 */
export class ProviderRegistry {
  private readonly byId = new Map<string, ProviderEndpoint>();
  private readonly connectors: Connector[] = [];
  private readonly live: Config['payments']['live'];

  constructor(config: Config, log?: Logger) {
    this.live = config.payments.live;
    const client = new HttpClient();
    const common = { timeoutMs: config.payments.providerTimeoutMs, client };
    const callbackUrl = (id: string) => `${config.baseUrl}/callbacks/${id}`;
    const add = (provider: ProviderEndpoint) => this.byId.set(provider.id, provider);
    for (const operator of OPERATORS) {
      const id = sandboxIdFor(operator);
      add(
        this.track(
          new SandboxConnector({
            ...common,
            id,
            environment: 'test',
            operator,
            url: `${config.sandboxProviderUrl}/${operator}`,
            apiKey: config.payments.sandboxProviderApiKey,
            callbackSecret: config.sandboxCallbackSecret,
            callbackUrl: callbackUrl(id),
          }),
        ),
      );
    }
    for (const name of Object.keys(LIVE_CONNECTOR_FACTORIES) as LiveConnectorName[]) {
      const connector = LIVE_CONNECTOR_FACTORIES[name](config, { ...common, callbackUrl: callbackUrl(name), log });
      if (connector) add(this.track(connector));
    }
    // the card acquirer of each environment (docs/decisions.md#cards-hosted-checkout): test keys the sandbox, live keys the configured one
    for (const [environment, endpoints] of [
      ['test', config.cards.sandbox],
      ['live', config.cards.live],
    ] as const) {
      if (!endpoints) continue;
      const id = cardAcquirerIdFor(environment);
      add(
        new HttpCardAcquirer(
          {
            ...common,
            id,
            environment,
            url: endpoints.providerUrl,
            apiKey: endpoints.apiKey,
            callbackSecret: endpoints.callbackSecret,
            callbackUrl: callbackUrl(id),
          },
          config.baseUrl,
        ),
      );
    }
  }

  /** The provider with this id, if configured (a payment's `provider`, the {provider} of /callbacks/{provider}). */
  byProviderId(id: string): ProviderEndpoint | undefined {
    return this.byId.get(id);
  }

  /** The mobile-money connector with this id (the one that handles an operation), if configured. */
  connector(id: string | null): Connector | undefined {
    return id ? this.connectors.find((c) => c.id === id) : undefined;
  }

  /** The connector that serves an operator's direction in an environment; undefined: none (closed in live). */
  route(environment: Environment, operator: Operator, direction: Direction): Connector | undefined {
    if (environment === 'test') return this.connector(sandboxIdFor(operator));
    const name = this.live.routes[operator]?.[direction];
    const connector = this.connector(name ?? null);
    return connector &&
      connector.capabilities.directions.includes(direction) &&
      connector.capabilities.operators.includes(operator)
      ? connector
      : undefined;
  }

  /** Every live connector, for what providers say of their own availability. */
  liveConnectors(): Connector[] {
    return this.connectors.filter((c) => c.environment === 'live');
  }

  close(): void {
    for (const c of this.connectors) c.close?.();
  }

  private track<C extends Connector>(connector: C): C {
    this.connectors.push(connector);
    return connector;
  }
}

export const sandboxIdFor = (operator: Operator) => `${operator}-sandbox`;
