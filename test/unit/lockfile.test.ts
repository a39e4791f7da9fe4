import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';

describe('package-lock.json', () => {
  it('records every platform build of msgpackr-extract, so that `npm ci` accepts it (run `npm run lockfile:fix` after npm install)', () => {
    const lock = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package-lock.json'), 'utf8'));
    const parent = lock.packages['node_modules/msgpackr-extract'];
    expect(parent, 'msgpackr-extract is in the lock').to.exist;
    const missing = Object.keys(parent.optionalDependencies ?? {}).filter(
      (name) => !lock.packages[`node_modules/${name}`],
    );
    expect(missing).to.deep.equal([]);
  });
});
