import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

/**
 * Comments point at something real (CONTRIBUTING.md#one-way-for-each-thing): a comment that cites a
 * document cites a file of the repository, and a section of it by its GitHub anchor
 * (`docs/decisions.md#faults-and-limits`), never a document outside it. Every file under the
 * folders below (sources, tests, scripts, schemas and their READMEs) is read; a failure names each
 * line with a citation whose file or section does not exist, or that cites in another way.
 */

const ROOT = path.join(__dirname, '..', '..');
const FOLDERS = ['api', 'workers', 'shared', 'scripts', 'test'];
const TEXT = /\.(ts|js|mjs|cjs|json|md|sh|sql|ya?ml|css|html|txt)$/;

/** Documents outside the repository (the specification's numbered sections, issues, the handbook's rules). */
const ELSEWHERE = /\bspec(?: section)? [0-9]+|issue [0-9]+|architecture[ ]rule/i;
/** `<path>.md` or `<path>.md#<anchor>` (not a name in quotes: code, not a citation). */
const CITATION = /(?<![\w./'"-])((?:\.{1,2}\/)?(?:[\w.-]+\/)*[\w-]+\.md)(?:#([\w-]*))?/g;
/** A section named by its title instead of its anchor: `docs/decisions.md "Faults"`, `README "Overload"`. */
const TITLED = /(?:\.md|\bREADME|\bCONTRIBUTING)[ ,(]*["'][A-Z]/;

/** The files under `dir`, repository-relative, without node_modules. */
function files(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : files(rel);
    return TEXT.test(e.name) ? [rel] : [];
  });
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, each space a hyphen. */
export function anchorOf(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-');
}

const anchorCache = new Map<string, Set<string>>();

/** The anchors of a Markdown file's headings, outside code blocks; a repeated heading gets `-1`, `-2`… */
function anchors(file: string): Set<string> {
  let found = anchorCache.get(file);
  if (found) return found;
  found = new Set();
  let fenced = false;
  for (const line of readFileSync(path.join(ROOT, file), 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = anchorOf(heading[1]);
    let anchor = base;
    for (let n = 1; found.has(anchor); n++) anchor = `${base}-${n}`;
    found.add(anchor);
  }
  anchorCache.set(file, found);
  return found;
}

/** What is wrong with one line of `file`, if anything. */
export function problems(file: string, line: string): string[] {
  const out: string[] = [];
  if (ELSEWHERE.test(line)) out.push('cites a document outside the repository');
  if (TITLED.test(line)) out.push('names a section by its title: cite <file>.md#<anchor>');
  for (const [, cited, anchor] of line.matchAll(CITATION)) {
    // `./README.md` from the citing file's folder, any other path from the repository's root
    const target = cited.startsWith('.') ? path.posix.join(path.posix.dirname(file), cited) : cited;
    if (!existsSync(path.join(ROOT, target))) out.push(`${cited}: no such file`);
    else if (anchor !== undefined && !anchors(target).has(anchor)) out.push(`${cited}#${anchor}: no such section`);
  }
  return out;
}

describe('document citations', () => {
  it('cite files and sections that exist, and no document outside the repository', () => {
    const wrong: string[] = [];
    // this file's own samples below are wrong on purpose
    for (const file of FOLDERS.flatMap(files).filter((f) => f !== 'test/unit/doc-citations.test.ts')) {
      readFileSync(path.join(ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const p of problems(file, line)) wrong.push(`${file}:${i + 1}: ${p}`);
        });
    }
    expect(wrong, `${wrong.length} wrong:\n${wrong.join('\n')}\n`).to.be.empty;
  });

  it('finds a wrong citation (the check can fail)', () => {
    const at = 'api/x.ts';
    expect(problems(at, '// docs/decisions.md#faults-and-limits')).to.deep.equal([]);
    expect(problems(at, '// docs/decisions.md#faults')).to.deep.equal(['docs/decisions.md#faults: no such section']);
    expect(problems(at, '// docs/decision.md#errors')).to.deep.equal(['docs/decision.md: no such file']);
    expect(problems(at, '// README.md#layout')).to.deep.equal(['README.md#layout: no such section']);
    expect(problems(at, '// decisions.md "Payment links"')).to.have.length(2);
    // put together, so that a grep of the folders for these words finds nothing here
    const outside = ['/** Step 4 (Spec 5.6.4) */', `// see ${'issue'} 35`, `// ${'architecture'} rule 2`];
    for (const line of outside)
      expect(problems(at, line), line).to.deep.equal(['cites a document outside the repository']);
    expect(anchorOf("Integrator's kit")).to.equal('integrators-kit');
    expect(anchorOf('TLS 1.3 at the edge')).to.equal('tls-13-at-the-edge');
  });
});
