import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

/**
 * The documentation in the repository stays true to it: the README is read in ten minutes, the
 * four documents of docs/ are there, and every file or folder they name exists. (The sections the
 * code cites: test/unit/doc-citations.test.ts; docs/settings.md against shared/config.ts:
 * test/unit/env-example.test.ts.)
 */

const ROOT = path.join(__dirname, '..', '..');
const DOCS = [
  'README.md',
  'CONTRIBUTING.md',
  'docs/operating.md',
  'docs/settings.md',
  'docs/decisions.md',
  'docs/benchmarks.md',
  'docs/adding-a-connector.md',
];
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

describe('documentation', () => {
  it('keeps the README to 150 lines', () => {
    expect(read('README.md').split('\n').length).to.be.at.most(150);
  });

  it('has each document the README links to', () => {
    for (const file of DOCS) expect(existsSync(path.join(ROOT, file)), file).to.equal(true);
    for (const [, link] of read('README.md').matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g))
      expect(existsSync(path.join(ROOT, link)), link).to.equal(true);
  });

  it('names only files and folders that exist', () => {
    const missing: string[] = [];
    for (const file of DOCS) {
      for (const [, named] of read(file).matchAll(/`((?:api|shared|workers|scripts|test|ops)\/[^`*<>\s]*)`/g)) {
        if (!existsSync(path.join(ROOT, named))) missing.push(`${file}: ${named}`);
      }
    }
    expect(missing).to.deep.equal([]);
  });
});
