import { tracingWanted } from './env';

/**
 * The first import of every entry point (each Procfile process). When an OTEL_* variable turns
 * traces on (./env.ts), it starts the SDK before the entry point's other imports load pg, ioredis
 * and http, so their instrumentations patch them; otherwise the SDK is never loaded.
 * An import rather than `node --import`: every way of starting a process runs the same entry
 * files, so none needs a flag (a script that does not import it can still use the flag).
 */
if (tracingWanted(process.env)) {
  // required here, not imported: loaded only when traces are on
  (require('./sdk') as typeof import('./sdk')).startTracing();
}
