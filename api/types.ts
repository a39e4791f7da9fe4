import type { Logger } from '../shared/logger';
import type { ServiceContext } from '../shared/context';
import type { IdempotencyKeyId, IdempotentRequest, StoredResponse } from '../shared/idempotency';

/**
 * The Idempotency-Key of a request to an atomic route (api/pipeline/request.ts): the route
 * writes it with its work, in one statement, and leaves the answer it stored in `stored`.
 */
export interface AtomicIdempotency {
  id: IdempotencyKeyId;
  request: IdempotentRequest;
  stored?: StoredResponse;
}

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
    idempotency?: AtomicIdempotency;
  }
  interface DefaultContext {
    services: ServiceContext;
  }
}

export {};
