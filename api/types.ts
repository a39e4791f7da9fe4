import type { Logger } from '../shared/logger';
import type { ServiceContext } from '../shared/context';
import type { CredentialForAuth } from '../shared/merchants/auth';
import type { RequestKey } from './pipeline/idempotency';
import type { SignedRequest } from '../shared/requestSignatures';

/** What middleware leaves on ctx.state / ctx for later steps. */
declare module 'koa' {
  interface DefaultState {
    requestId: string;
    log: Logger;
    /** The key the bearer step authenticated (its decrypted secret kept in memory only). */
    auth?: Omit<CredentialForAuth, 'expiresAtMs'>;
    /** Exact bytes of the request body, read once by the body step. */
    rawBody?: Buffer;
    body?: unknown;
    /** The request's Idempotency-Key, on a route that takes one (api/pipeline/idempotency.ts). */
    idempotency?: RequestKey;
    /** A signed POST whose signature its route takes with its key (api/pipeline/replay.ts). */
    signed?: SignedRequest;
  }
  interface DefaultContext {
    services: ServiceContext;
  }
}

export {};
