/**
 * Moves TypeScript modules and rewrites every relative import of them, and theirs, so that a
 * rename is one command that can be run again after a merge (CONTRIBUTING.md#commit):
 *
 *   node --import tsx scripts/move-module.ts <from.ts> <to.ts> [<from.ts> <to.ts> ...]
 *
 * Paths are from the repository's root. A pair whose file is already at its new place is still
 * applied to the imports (the run after a merge). Mentions of the old path in comments, strings
 * and Markdown (`shared/x/y.ts`, `shared/x/y`) are rewritten too. Uses `git mv`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const args = process.argv.slice(2);
if (args.length === 0 || args.length % 2 !== 0) {
  console.error('usage: move-module.ts <from.ts> <to.ts> [<from.ts> <to.ts> ...]');
  process.exit(2);
}

const noExt = (p: string) => p.replace(/\.(ts|js|mjs)$/, '');
const moves = new Map<string, string>();
for (let i = 0; i < args.length; i += 2) moves.set(noExt(args[i]), noExt(args[i + 1]));

/** Where each file moved by this run stood before (its own imports were written from there). */
const before = new Map<string, string>();
for (const [from, to] of moves) {
  if (existsSync(path.join(ROOT, `${from}.ts`))) {
    mkdirSync(path.dirname(path.join(ROOT, to)), { recursive: true });
    execFileSync('git', ['mv', `${from}.ts`, `${to}.ts`], { cwd: ROOT });
    before.set(to, from);
  }
}

const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
  .split('\0')
  .filter((f) => f && existsSync(path.join(ROOT, f)));

const specifier = (fromFile: string, target: string) => {
  let rel = path.posix.relative(path.posix.dirname(fromFile), target);
  if (!rel.startsWith('.')) rel = `./${rel}`;
  return rel;
};

let changed = 0;
for (const file of tracked) {
  const full = path.join(ROOT, file);
  const isCode = /\.(ts|mjs|js)$/.test(file) && !file.startsWith('node_modules/');
  const isText = isCode || /\.(md|json|sql|yml|yaml)$/.test(file) || file === 'Procfile';
  if (!isText) continue;
  const source = readFileSync(full, 'utf8');
  let out = source;
  if (isCode) {
    const here = noExt(file);
    const wasAt = before.get(here) ?? here;
    out = out.replace(
      /((?:from|import|require\(|import\()\s*['"])(\.{1,2}\/[^'"]+)(['"])/g,
      (all, head: string, spec: string, tail: string) => {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(wasAt), spec));
        const moved = moves.get(noExt(target));
        const resolved = moved ?? target;
        if (!moved && wasAt === here) return all;
        const ext = /\.(ts|js|mjs)$/.exec(spec)?.[0] ?? '';
        return `${head}${specifier(file, noExt(resolved))}${ext}${tail}`;
      },
    );
  }
  for (const [from, to] of moves) {
    // a path mention, with or without its extension, not inside a longer name
    out = out.replace(
      new RegExp(`(?<![\\w/.-])${from.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(?=\\.ts\\b|['"\`\\s):,]|$)`, 'gm'),
      to,
    );
  }
  if (out !== source) {
    writeFileSync(full, out);
    changed++;
  }
}
console.log(`moved ${moves.size} module(s); rewrote ${changed} file(s)`);
