import { expect } from 'chai';
import path from 'node:path';
import madge from 'madge';

/**
 * No import circle (issue 11): every module of the service, its scripts and its tests is read
 * with madge; `import type` is skipped (it leaves no edge at run time). A circle fails here with
 * its path.
 */
describe('module graph', () => {
  it('has no import circle', async function () {
    this.timeout(60_000);
    const root = path.join(__dirname, '..', '..');
    const graph = await madge(['api', 'shared', 'workers', 'scripts', 'test'].map((d) => path.join(root, d)), {
      baseDir: root,
      fileExtensions: ['ts'],
      tsConfig: path.join(root, 'tsconfig.json'),
      detectiveOptions: { ts: { skipTypeImports: true } },
    });
    expect(graph.circular().map((c) => c.join(' → '))).to.deep.equal([]);
  });
});
