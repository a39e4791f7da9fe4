/**
 * `npm run sdk:pack [-- <dir>]`: builds the merchant SDK (shared/client: TypeScript to
 * CommonJS with declarations) and packs it as an npm tarball in <dir> (default: the current
 * directory), for a merchant's project to `npm install ./svc-merchant-sdk-<version>.tgz`.
 * Prints the tarball's path.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const SDK_DIR = resolve(__dirname, '../shared/client');

export function packSdk(destination: string): string {
  mkdirSync(destination, { recursive: true });
  rmSync(join(SDK_DIR, 'dist'), { recursive: true, force: true });
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(SDK_DIR, 'tsconfig.json')], {
    stdio: 'inherit',
  });
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', destination], {
    cwd: SDK_DIR,
    encoding: 'utf8',
  });
  const [{ filename }] = JSON.parse(out) as { filename: string }[];
  rmSync(join(SDK_DIR, 'dist'), { recursive: true, force: true }); // the tarball has it; the tree keeps only sources
  return join(destination, filename);
}

if (require.main === module) {
  const file = packSdk(resolve(process.argv[2] ?? '.'));
  process.stdout.write(`${file}\n`);
}
