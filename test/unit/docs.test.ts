import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

/**
 * The documentation in the repository stays true to it: the README is read in ten minutes, the
 * four documents of docs/ are there, every file or folder they name exists, and every section of
 * docs/decisions.md a comment cites by its title (`docs/decisions.md "Faults"`) is there.
 * (docs/settings.md against shared/config.ts: test/unit/env-example.test.ts.)
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

  it('has every section of docs/decisions.md that the code cites', () => {
    const headings = [...read('docs/decisions.md').matchAll(/^#{2,3} (.+)$/gm)].map((m) => m[1]);
    // a citation names a heading, or its first words ("Faults" for "Faults and limits")
    const found = (title: string) => headings.some((h) => h === title || h.startsWith(`${title} `));
    const missing = new Set<string>();
    for (const file of sources(['api', 'workers', 'shared', 'scripts', 'test'])) {
      for (const [, cited] of read(file).matchAll(/docs\/decisions\.md[ ,(]*"([^"]+)"/g)) {
        const title = cited.replace(/\s*\n\s*(\*|\/\/)?\s*/g, ' '); // a title wrapped across comment lines
        if (!found(title)) missing.add(`${file}: "${title}"`);
      }
    }
    expect([...missing]).to.deep.equal([]);
  });
});

/** The source and documentation files under these folders. */
function sources(dirs: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (/\.(ts|js|md)$/.test(entry.name)) out.push(rel);
    }
  };
  for (const dir of dirs) walk(dir);
  return out;
}
