import type { Environment } from './rules/ledger';

/**
 * Who a merchant request acts for: the merchant and its key's environment (every read and
 * write is confined to them), and the request id carried into the jobs it enqueues.
 */
export interface Caller {
  merchantId: string;
  environment: Environment;
  requestId?: string;
}
