import type { Config } from '../config';
import type { Environment } from '../domain/ledger';
import { OPERATORS, type Operator } from '../domain/msisdn';
import { cardAcquirerIdFor, HttpCardAcquirer } from './cardAcquirer';
import { HttpProvider } from './http';
import type { ProviderBase } from './types';
import { HttpClient } from '../httpClient';

/**
 * Which provider handles an operator in an environment. Test keys go to the sandbox provider,
 * live keys to the operator's configured provider, through the same adapter. Sandbox and live
 * providers have distinct ids, so a callback verified with the sandbox secret can only ever
 * decide a test object. Each process builds one, in its service context (shared/context.ts).
 */

export const providerIdFor = (environment: Environment, operator: Operator) => (environment === 'test' ? `${operator}-sandbox` : operator);

export class ProviderRegistry {
  private readonly byId = new Map<string, ProviderBase>();

  constructor(config: Config) {
    const common = { timeoutMs: config.payments.providerTimeoutMs, client: new HttpClient() };
    const callbackUrl = (id: string) => `${config.baseUrl}/callbacks/${id}`;
    const add = (provider: ProviderBase) => this.byId.set(provider.id, provider);
    for (const operator of OPERATORS) {
      const sandboxId = providerIdFor('test', operator);
      add(
        new HttpProvider({
          ...common,
          id: sandboxId,
          environment: 'test',
          operator,
          url: `${config.sandboxProviderUrl}/${operator}`,
          apiKey: config.payments.sandboxProviderApiKey,
          callbackSecret: config.sandboxCallbackSecret,
          callbackUrl: callbackUrl(sandboxId),
        }),
      );
      const live = config.payments.liveProviders[operator];
      const liveId = providerIdFor('live', operator);
      if (live) add(new HttpProvider({ ...common, id: liveId, environment: 'live', operator, ...live, callbackUrl: callbackUrl(liveId) }));
    }
    // the card acquirer of each environment (docs/decisions.md "Cards"): test keys the sandbox, live keys the configured one
    for (const [environment, endpoints] of [['test', config.cards.sandbox], ['live', config.cards.live]] as const) {
      if (!endpoints) continue;
      const id = cardAcquirerIdFor(environment);
      add(new HttpCardAcquirer({ ...common, id, environment, url: endpoints.providerUrl, apiKey: endpoints.apiKey, callbackSecret: endpoints.callbackSecret, callbackUrl: callbackUrl(id) }, config.baseUrl));
    }
  }

  /** The provider with this id, if configured (the {provider} of /callbacks/{provider}). */
  byProviderId(id: string): ProviderBase | undefined {
    return this.byId.get(id);
  }
}
