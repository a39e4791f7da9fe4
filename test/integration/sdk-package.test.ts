import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { packSdk } from '../../scripts/sdk-pack';
import { signRequest } from '../../shared/client/signing';
import { signatureHeader } from '../../shared/client/webhooks';

/**
 * The SDK as a merchant gets it: `npm run sdk:pack` builds the tarball, a fresh Node project
 * installs it (offline: it has no dependencies) and uses it with plain `require`, no TypeScript.
 */
describe('merchant SDK package (npm run sdk:pack)', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'sdk-consumer-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('installs from the tarball into a plain Node project and works there', () => {
    const tarball = packSdk(dir);
    const project = join(dir, 'shop');
    execFileSync('mkdir', ['-p', project]);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'shop', version: '1.0.0', private: true }));
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], { cwd: project, stdio: 'pipe' });
    const installed = join(project, 'node_modules/@svc/merchant-sdk');
    expect(existsSync(join(installed, 'dist/index.d.ts')), 'type declarations shipped').to.equal(true);
    expect(JSON.parse(readFileSync(join(installed, 'openapi.json'), 'utf8')).openapi).to.equal('3.1.0');
    const script = `
      const sdk = require('@svc/merchant-sdk');
      const api = new sdk.PaymentsApi({ baseUrl: 'http://127.0.0.1:1', apiKey: 'svc_test_x', secret: 'sk_x' });
      console.log(JSON.stringify({
        api: typeof api.payments.create === 'function' && typeof api.payments.list({}).toArray === 'function',
        sig: sdk.signRequest('sk_x', '1700000000', 'POST', '/v1/payments', '{}'),
        hook: sdk.verifyWebhook('{}', { 'x-service-signature': process.argv[1] }, 'whsec_x', { now: 1700000000 }).ok,
        errors: new sdk.NotFoundError({ status: 404, code: 'not-found', message: 'm', requestId: 'r', retryAfter: null, headers: new Headers(), body: null }) instanceof sdk.PaymentsApiError,
      }));`;
    const out = execFileSync(process.execPath, ['-e', script, signatureHeader('whsec_x', 1_700_000_000, '{}')], {
      cwd: project,
      encoding: 'utf8',
    });
    expect(JSON.parse(out)).to.deep.equal({
      api: true,
      sig: signRequest('sk_x', '1700000000', 'POST', '/v1/payments', '{}'),
      hook: true,
      errors: true,
    });
  });
});
