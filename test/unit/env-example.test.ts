import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, PROVIDER_OPERATORS } from '../../shared/config';
import { ALL_QUEUES } from '../../shared/queues/names';

const ROOT = path.join(__dirname, '..', '..');
const example = readFileSync(path.join(ROOT, '.env.example'), 'utf8');
const listed = new Map(
  example
    .split('\n')
    .filter((l) => /^[A-Z][A-Z0-9_]*=/.test(l))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const),
);

describe('.env.example', () => {
  it('lists every variable the configuration reads', () => {
    const source = readFileSync(path.join(ROOT, 'shared', 'config.ts'), 'utf8');
    const read = new Set<string>();
    for (const m of source.matchAll(/(?:int|url|bool|oneOf)\(env, '([A-Z0-9_]+)'|env\.([A-Z][A-Z0-9_]+)/g)) read.add(m[1] ?? m[2]);
    for (const op of PROVIDER_OPERATORS) read.add(`LIVE_${op.toUpperCase()}`);
    for (const q of ALL_QUEUES) read.add(`${q.toUpperCase().replace(/-/g, '_')}_CONCURRENCY`);
    expect(read.size).to.be.greaterThan(20);
    const missing = [...read].filter((name) => !listed.has(name));
    expect(missing, 'variables read by shared/config.ts but absent from .env.example').to.deep.equal([]);
  });

  it('holds values the configuration accepts', () => {
    const env = Object.fromEntries([...listed].filter(([, v]) => v !== ''));
    expect(() => loadConfig(env)).not.to.throw();
  });
});
