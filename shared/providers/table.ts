import type { Env } from '../env';
import { OPERATORS, type Direction, type Environment, type Operator } from '../vocabulary';
import { loadCardSandboxSettings } from './cardSandbox/settings';
import { loadAirtelSettings, type AirtelSettings } from './airtel/settings';
import { loadMpgsSettings } from './mpgs/settings';
import { loadPawapaySettings } from './pawapay/settings';
import { loadSandboxSettings } from './sandbox/settings';

/**
 * The connector table (docs/adding-a-connector.md): every provider the service speaks to, one
 * entry each, keyed by its name. The name is the connector's metrics label
 * (shared/metrics/providerCalls.ts), the value of its routing setting (`LIVE_<OPERATOR>=pawapay`,
 * `LIVE_CARD=<name>`), and, for a live connector, its provider id (a payment's `provider`, the
 * {provider} of /callbacks/{provider}). Each entry names its payment method, its environment
 * (test: the sandboxes test keys always reach; live: real providers' public APIs), and its
 * settings loader, in its own folder; shared/config.ts composes them, and
 * shared/providers/registry.ts builds each connector from its settings. This module imports no
 * connector, so the configuration can read it.
 */

export type PaymentMethod = 'mobile_money' | 'card';

interface EntryBase<S> {
  readonly method: PaymentMethod;
  readonly environment: Environment;
  /** its folder: its settings loader (settings.ts), its connector, its README */
  readonly folder: string;
  /** reads the connector's own settings; null: not configured (its routes are refused at start) */
  readonly settings: (env: Env, production: boolean) => S;
}

export interface MobileMoneyEntry<S> extends EntryBase<S> {
  readonly method: 'mobile_money';
  /** the operators it can reach (an aggregator reaches several with one account) */
  readonly reach: readonly Operator[];
  /** why these settings cannot serve this direction (a start-up error naming what is missing); null: they can */
  readonly refuseRoute?: (settings: NonNullable<S>, direction: Direction) => string | null;
}

export interface CardEntry<S> extends EntryBase<S> {
  readonly method: 'card';
}

export type ConnectorEntry<S = unknown> = MobileMoneyEntry<S> | CardEntry<S>;

export const CONNECTORS = {
  /** the sandbox mobile-money provider: one connector per operator (ids `<operator>-sandbox`) */
  sandbox: {
    method: 'mobile_money',
    environment: 'test',
    folder: 'shared/providers/sandbox',
    reach: OPERATORS,
    settings: loadSandboxSettings,
  },
  /** the card sandbox: its vault and acquirer, its own protocol (id `card-sandbox`) */
  'card-sandbox': {
    method: 'card',
    environment: 'test',
    folder: 'shared/providers/cardSandbox',
    settings: loadCardSandboxSettings,
  },
  /** pawaPay Merchant API v2: VODACOM_MPESA_COD, AIRTEL_COD, ORANGE_COD */
  pawapay: {
    method: 'mobile_money',
    environment: 'live',
    folder: 'shared/providers/pawapay',
    reach: ['vodacom', 'airtel', 'orange'],
    settings: loadPawapaySettings,
  },
  /** Airtel Money Open API (direct) */
  airtel: {
    method: 'mobile_money',
    environment: 'live',
    folder: 'shared/providers/airtel',
    reach: ['airtel'],
    settings: loadAirtelSettings,
    refuseRoute: (settings: AirtelSettings, direction: Direction) =>
      direction === 'payout' && !settings.disbursementPin
        ? 'Airtel payouts need AIRTEL_DISBURSEMENT_PIN and AIRTEL_PIN_PUBLIC_KEY'
        : null,
  },
  /** Mastercard Gateway (MPGS) REST API v100: Hosted Session, EMV 3-D Secure (id `mpgs`) */
  mpgs: {
    method: 'card',
    environment: 'live',
    folder: 'shared/providers/mpgs',
    settings: loadMpgsSettings,
  },
} as const satisfies Record<string, ConnectorEntry<any>>;

export type ConnectorName = keyof typeof CONNECTORS;
export const CONNECTOR_NAMES = Object.keys(CONNECTORS) as ConnectorName[];

type Entry<N extends ConnectorName> = (typeof CONNECTORS)[N];
type NamesWhere<M extends PaymentMethod, E extends Environment> = {
  [N in ConnectorName]: Entry<N> extends { method: M; environment: E } ? N : never;
}[ConnectorName];

/** The connectors `LIVE_<OPERATOR>` may name, and those `LIVE_CARD` may name. */
export type LiveMobileMoneyName = NamesWhere<'mobile_money', 'live'>;
export type LiveCardName = NamesWhere<'card', 'live'>;
/** The names of the connectors of a method and environment. */
export const connectorsOf = (method: PaymentMethod, environment: Environment): ConnectorName[] =>
  CONNECTOR_NAMES.filter((n) => {
    const entry: { method: PaymentMethod; environment: Environment } = CONNECTORS[n];
    return entry.method === method && entry.environment === environment;
  });
export const LIVE_MOBILE_MONEY = connectorsOf('mobile_money', 'live') as LiveMobileMoneyName[];
export const LIVE_CARD = connectorsOf('card', 'live') as LiveCardName[];

/** Each connector's settings, as its loader returns them (null: not configured). */
export type ConnectorSettings = { [N in ConnectorName]: ReturnType<Entry<N>['settings']> };

/** Every connector's settings, each read by its own loader. */
export function loadConnectorSettings(env: Env, production: boolean): ConnectorSettings {
  return Object.fromEntries(
    CONNECTOR_NAMES.map((name) => [name, CONNECTORS[name].settings(env, production)]),
  ) as ConnectorSettings;
}
