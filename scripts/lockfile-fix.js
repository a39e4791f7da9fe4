#!/usr/bin/env node
/**
 * `npm run lockfile:fix`: run after any `npm install`.
 * The registry mirror of our build machines serves only the Linux builds of msgpackr-extract
 * (BullMQ → msgpackr → msgpackr-extract), so npm cannot record the other platforms' optional
 * builds in package-lock.json, and `npm ci` then refuses the lock as out of sync (npm/cli#4828).
 * This adds them exactly as npm records them elsewhere: optional, gated by os and cpu, so they
 * are never fetched on a machine they do not fit.
 */
const fs = require('node:fs');
const path = require('node:path');

const file = path.join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const pkgs = lock.packages;
const parent = pkgs['node_modules/msgpackr-extract'];
if (!parent) process.exit(0);
let added = 0;
for (const [name, version] of Object.entries(parent.optionalDependencies || {})) {
  const key = `node_modules/${name}`;
  if (pkgs[key]) continue;
  const m = /-(darwin|linux|win32)-(arm64|x64|arm)$/.exec(name);
  if (!m) throw new Error(`unexpected optional dependency ${name}`);
  pkgs[key] = { version, cpu: [m[2]], license: 'MIT', optional: true, os: [m[1]] };
  added++;
}
const sorted = Object.keys(pkgs).sort((a, b) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0));
lock.packages = Object.fromEntries(sorted.map((k) => [k, pkgs[k]]));
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
process.stdout.write(`lockfile: ${added} platform entr${added === 1 ? 'y' : 'ies'} added\n`);
