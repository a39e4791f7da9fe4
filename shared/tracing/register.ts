import { tracingWanted } from './env';

/**
 * The first import of every entry point (each Procfile process: api/server.ts, workers/<pool>/
 * index.ts, the sandbox servers). When an OTEL_* variable turns traces on (./env.ts), it starts
 * the OpenTelemetry SDK before the entry point's other imports load pg, ioredis and http, so
 * their instrumentations patch them. Otherwise it does nothing else: the SDK is never loaded.
 *
 * An import rather than `node --import`: the Procfile, `npm start` and the tests' spawned
 * processes all run the same entry files, so none of them needs a flag of its own, and a process
 * started any other way is traced the same. The same file also works as
 * `node --import ./build/shared/tracing/register.js …` for a script that does not import it.
 */
if (tracingWanted(process.env)) {
  // required here, not imported: loaded only when traces are on
  (require('./sdk') as typeof import('./sdk')).startTracing();
}
