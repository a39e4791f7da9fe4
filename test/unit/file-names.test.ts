import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * One file-naming scheme (CONTRIBUTING.md#one-way-for-each-thing): source modules under api/, shared/ and workers/ are
 * camelCase; scripts (named after their npm command) and test files are kebab-case; migrations
 * keep knex's <timestamp>_<snake_case>.ts. A file named otherwise fails here with its path.
 */
const ROOT = path.join(__dirname, '..', '..');
const CAMEL = /^[a-z][a-zA-Z0-9]*\.(ts|js)$/;
const KEBAB = /^[a-z][a-z0-9]*(-[a-z0-9]+)*(\.test)?\.(ts|js)$/;
const MIGRATION = /^\d{14}_[a-z0-9]+(_[a-z0-9]+)*\.ts$/;

function sources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'dist' ? [] : sources(rel);
    return /\.(ts|js)$/.test(e.name) ? [rel] : [];
  });
}

describe('file names', () => {
  it('are camelCase under api/, shared/ and workers/, kebab-case in scripts/ and test/, knex-style for migrations', () => {
    const misnamed: string[] = [];
    for (const dir of ['api', 'shared', 'workers']) {
      for (const f of sources(dir)) {
        const scheme = f.startsWith(path.join('shared', 'db', 'migrations') + path.sep) ? MIGRATION : CAMEL;
        if (!scheme.test(path.basename(f))) misnamed.push(f);
      }
    }
    for (const dir of ['scripts', 'test'])
      for (const f of sources(dir)) if (!KEBAB.test(path.basename(f))) misnamed.push(f);
    expect(sources('shared').length).to.be.greaterThan(50);
    expect(misnamed).to.deep.equal([]);
  });
});
