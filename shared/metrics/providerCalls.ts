import { Histogram } from 'prom-client';
import { OPERATORS } from '../vocabulary';
import { CONNECTOR_NAMES, CONNECTORS, type ConnectorName } from '../providers/table';
import { processRegistry } from './registry';

/**
 * Every provider call of the operations kernel (a send, an ask), timed through `timeProviderCall`
 * (shared/operations/health.ts). Label values come from closed sets only:
 * - connector: the connector that was called: its name in the connector table
 *   (shared/providers/table.ts: sandbox, card-sandbox, pawapay, airtel, …);
 * - operator: vodacom, airtel, orange, africell, or `card` for a card connector;
 * - kind: payment, refund, payout, card_payment;
 * - environment: test, live;
 * - outcome: `answered` (the provider took the request or told what it knows), `refused` (it
 *   answered with a permanent refusal), `timeout` (no answer within PROVIDER_TIMEOUT_MS),
 *   `error` (unreachable, 5xx, a protocol error: worth retrying).
 */
export const providerCallDuration = new Histogram({
  name: 'provider_call_duration_seconds',
  help: 'Provider calls of the operations kernel (sends and asks), by connector, operator, kind, environment and outcome',
  labelNames: ['connector', 'operator', 'kind', 'environment', 'outcome'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30],
  registers: [processRegistry],
});

const KINDS = new Set(['payment', 'refund', 'payout', 'card_payment']);
const ENVIRONMENTS = new Set(['test', 'live']);

/** What the kernel knows of the provider it calls (shared/providers/connector.ts). */
type CalledProvider = { readonly connector: ConnectorName; readonly environment: string };

/** Every value of the connector label: the table's names, derived (test/unit/provider-calls.test.ts builds each). */
export const CONNECTOR_LABELS: readonly string[] = CONNECTOR_NAMES;

/** The connector label: the name of its entry in the connector table. */
export function connectorLabel(provider: CalledProvider): string {
  // only a provider built outside the table (never in the service) can miss: the unit test builds every entry
  return CONNECTOR_LABELS.includes(provider.connector) ? provider.connector : 'other';
}

/** The operator label of an operation: its operator, `card` for a card connector's payment. */
export function operatorLabel(provider: CalledProvider, operator: string | null): string {
  if (operator && (OPERATORS as string[]).includes(operator)) return operator;
  return CONNECTORS[provider.connector]?.method === 'card' ? 'card' : 'other';
}

/** A provider error carries `retryable` and `code` (shared/providers/errors.ts); anything else is an error. */
function outcomeOf(err: unknown): 'refused' | 'timeout' | 'error' {
  const e = err as { retryable?: unknown; code?: unknown } | null;
  if (e && e.retryable === false) return 'refused';
  if (e && e.code === 'provider-timeout') return 'timeout';
  return 'error';
}

/** The same call, timed into provider_call_duration_seconds; its result or error passes through. */
export function timeProviderCall<T>(
  provider: CalledProvider,
  operator: string | null,
  kind: string,
  call: () => Promise<T>,
): () => Promise<T> {
  const labels = {
    connector: connectorLabel(provider),
    operator: operatorLabel(provider, operator),
    kind: KINDS.has(kind) ? kind : 'other',
    environment: ENVIRONMENTS.has(provider.environment) ? provider.environment : 'other',
  };
  return async () => {
    const end = providerCallDuration.startTimer(labels);
    try {
      const result = await call();
      end({ outcome: 'answered' });
      return result;
    } catch (err) {
      end({ outcome: outcomeOf(err) });
      throw err;
    }
  };
}
