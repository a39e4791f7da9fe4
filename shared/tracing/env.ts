import path from 'node:path';

/**
 * When traces are on, and what a process is called in them. Pure and free of dependencies: the
 * register module (./register.ts) reads this before anything else of the process is loaded.
 *
 * Traces are off by default. The standard OpenTelemetry variables turn them on:
 * - OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (a collector's OTLP/HTTP
 *   address), or OTEL_TRACES_EXPORTER naming an exporter (`otlp`, `console`);
 * - OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true keep them off whatever else is set.
 */
export function tracingWanted(env: Record<string, string | undefined>): boolean {
  const set = (name: string) => (env[name] ?? '').trim() !== '';
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.includes('none')) return false;
  return exporters.length > 0 || set('OTEL_EXPORTER_OTLP_ENDPOINT') || set('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
}

/**
 * The Procfile name of the process an entry file starts (`build/workers/provider-push/index.js`
 * and `workers/provider-push/index.ts` are both `provider-push`), for its traces' service name;
 * PROCESS_NAME (set by `npm start`) wins.
 */
const ENTRIES: Record<string, string> = {
  'api/server': 'web',
  'shared/providers/sandbox/server': 'sandbox-provider',
  'shared/cards/sandbox/vaultServer': 'card-vault',
  'shared/cards/sandbox/acquirerServer': 'card-acquirer',
};

export function processNameOf(
  entry: string | undefined,
  root: string,
  env: Record<string, string | undefined> = {},
): string {
  if (env.PROCESS_NAME) return env.PROCESS_NAME;
  if (!entry) return 'node';
  const rel = path
    .relative(root, path.resolve(entry))
    .split(path.sep)
    .join('/')
    .replace(/^build\//, '')
    .replace(/\.(ts|js)$/, '');
  const pool = /^workers\/([^/]+)\/index$/.exec(rel);
  return pool ? pool[1] : (ENTRIES[rel] ?? path.basename(rel));
}
