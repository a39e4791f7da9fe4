import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../shared/config';
import { CONNECTOR_NAMES, CONNECTORS } from '../../shared/providers/table';
import { ALL_QUEUES } from '../../shared/queues/names';
import { OPERATORS } from '../../shared/vocabulary';

const ROOT = path.join(__dirname, '..', '..');
const example = readFileSync(path.join(ROOT, '.env.example'), 'utf8');
const listed = new Map(
  example
    .split('\n')
    .filter((l) => /^[A-Z][A-Z0-9_]*=/.test(l))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const),
);

/**
 * The modules that read the environment: the configuration with each connector's settings loader
 * (the connector table's folders), and the few settings read before it exists.
 */
const CONFIG = [
  'shared/config.ts',
  'shared/env.ts',
  ...CONNECTOR_NAMES.map((n) => `${CONNECTORS[n].folder}/settings.ts`),
];
const EARLY = ['shared/heartbeat.ts', 'shared/metrics/ports.ts', 'shared/tracing/env.ts'];

/** Every variable these modules read, the per-operator and per-pool ones spelt out. */
function variablesRead(files = CONFIG): Set<string> {
  const read = new Set<string>();
  for (const file of files) {
    const source = readFileSync(path.join(ROOT, file), 'utf8');
    for (const m of source.matchAll(
      /(?:int|url|bool|oneOf|portSetting)\(env, '([A-Z0-9_]+)'|\bset\('([A-Z0-9_]+)'\)|env\.([A-Z][A-Z0-9_]+)/g,
    ))
      read.add(m[1] ?? m[2] ?? m[3]);
  }
  for (const v of spelt('LIVE_<OPERATOR>')) read.add(v);
  for (const v of spelt('<POOL>_CONCURRENCY')) read.add(v);
  if (files.includes('shared/metrics/ports.ts')) for (const v of spelt('<POOL>_METRICS_PORT')) read.add(v);
  return read;
}

/** A name of docs/settings.md with its placeholder (`<OPERATOR>`, `<POOL>`) replaced by each value. */
function spelt(name: string): string[] {
  if (name.includes('<OPERATOR>')) return OPERATORS.map((op) => name.replace('<OPERATOR>', op.toUpperCase()));
  if (name.includes('<POOL>')) return ALL_QUEUES.map((q) => name.replace('<POOL>', q.toUpperCase().replace(/-/g, '_')));
  return [name];
}

describe('.env.example', () => {
  it('lists every variable the configuration reads', () => {
    const read = variablesRead();
    expect(read.size).to.be.greaterThan(20);
    const missing = [...read].filter((name) => !listed.has(name));
    expect(missing, 'variables read by shared/config.ts but absent from .env.example').to.deep.equal([]);
  });

  it('holds values the configuration accepts', () => {
    const env = Object.fromEntries([...listed].filter(([, v]) => v !== ''));
    expect(() => loadConfig(env)).not.to.throw();
  });
});

describe('docs/settings.md', () => {
  const page = readFileSync(path.join(ROOT, 'docs', 'settings.md'), 'utf8');
  // the first column of the table: the variables each row is about
  const documented = new Set(
    page
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .flatMap((l) => [...l.split('|')[1].matchAll(/`([A-Z<][A-Z0-9_<>]*)`/g)].flatMap((m) => spelt(m[1]))),
  );

  it('describes every variable the configuration reads', () => {
    const missing = [...variablesRead([...CONFIG, ...EARLY])].filter((name) => !documented.has(name));
    expect(missing, 'variables read by shared/config.ts but absent from docs/settings.md').to.deep.equal([]);
  });

  it('describes no variable the configuration does not read', () => {
    const read = variablesRead([...CONFIG, ...EARLY]);
    const stale = [...documented].filter((name) => !read.has(name));
    expect(stale, 'variables in docs/settings.md that shared/config.ts does not read').to.deep.equal([]);
  });
});
