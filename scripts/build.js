// The production build (docs/operating.md#processes): `tsc -p tsconfig.build.json` compiles what `npm start` and the
// Procfile run (api, workers, shared, the supervisor) to build/, and the files the code reads
// beside itself (checkout and card-sandbox assets) are copied there. `--if-stale` builds only
// when a source is newer than the last build: `npm start` runs it first, `npm ci` runs the full
// build (the `prepare` script), so a platform's build phase leaves it ready. Plain JavaScript:
// it runs before anything is compiled. Migrations are run by tsx (knex keeps their file names).
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const OUT = path.join(ROOT, 'build');
const STAMP = path.join(OUT, '.built');
const SOURCES = [
  'api',
  'workers',
  'shared',
  'scripts/start.ts',
  'scripts/local-services.ts',
  'tsconfig.json',
  'tsconfig.build.json',
  'package-lock.json',
];
const ASSETS = ['api/checkout/assets', 'shared/cards/sandbox/assets'];

/** The newest modification time under `p` (a file or a folder), in ms. */
function newest(p) {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const entry of fs.readdirSync(p)) {
    if (entry === 'node_modules' || entry === 'dist') continue;
    max = Math.max(max, newest(path.join(p, entry)));
  }
  return max;
}

function isStale() {
  if (!fs.existsSync(STAMP)) return true;
  const built = fs.statSync(STAMP).mtimeMs;
  return SOURCES.some((s) => fs.existsSync(path.join(ROOT, s)) && newest(path.join(ROOT, s)) > built);
}

function build() {
  const started = Date.now();
  execFileSync(
    process.execPath,
    [require.resolve('typescript/bin/tsc'), '-p', path.join(ROOT, 'tsconfig.build.json')],
    { cwd: ROOT, stdio: 'inherit' },
  );
  for (const dir of ASSETS) fs.cpSync(path.join(ROOT, dir), path.join(OUT, dir), { recursive: true });
  fs.writeFileSync(STAMP, new Date().toISOString());
  process.stdout.write(`build | compiled to build/ in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

if (require.main === module) {
  if (!process.argv.includes('--if-stale') || isStale()) build();
}

module.exports = { build, isStale };
