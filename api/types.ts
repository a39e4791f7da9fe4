import type { Logger } from '../shared/logger';
import type { ServiceContext } from '../shared/context';
import type { RequestKey } from './pipeline/idempotency';

/** What middleware leaves on ctx.state / ctx for later steps. */
export interface MerchantAuth {
  credentialId: string;
  merchantId: string;
  environment: 'test' | 'live';
  scope: 'read' | 'payments' | 'full';
  ipAllowlist: string[] | null;
  merchantStatus: 'active' | 'suspended';
  /** Decrypted signing secret (sk_), kept in memory only. */
  secret: string;
}

declare module 'koa' {
  interface DefaultState {
    requestId: string;
    log: Logger;
    auth?: MerchantAuth;
    /** Exact bytes of the request body, read once by the body step. */
    rawBody?: Buffer;
    body?: unknown;
    /** The request's Idempotency-Key, on a route that takes one (api/pipeline/idempotency.ts). */
    idempotency?: RequestKey;
  }
  interface DefaultContext {
    services: ServiceContext;
  }
}

export {};
