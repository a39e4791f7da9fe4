import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { checkContract, type ContractName } from '../../shared/providers/pawapay/contract';

const DIR = path.join(__dirname, '..', '..', 'shared', 'providers', 'pawapay', 'schema');
const files = readdirSync(DIR).filter((f) => f.endsWith('.json'));

/** Every property schema (at any depth) without a reference URL in its $comment or description. */
function uncited(node: unknown, at: string, out: string[]): string[] {
  if (Array.isArray(node)) node.forEach((v, i) => uncited(v, `${at}/${i}`, out));
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (o.properties && typeof o.properties === 'object') {
      for (const [name, p] of Object.entries(o.properties as Record<string, Record<string, unknown>>)) {
        if (
          p &&
          typeof p === 'object' &&
          !('$ref' in p) &&
          !/https:\/\//.test(JSON.stringify([p.$comment, p.description]))
        )
          out.push(`${at}/properties/${name}`);
      }
    }
    for (const [k, v] of Object.entries(o)) uncited(v, `${at}/${k}`, out);
  }
  return out;
}

describe('pawaPay contract: the JSON Schemas', () => {
  it('has one schema per request sent and per answer or callback read, each compiled by the repo ajv', () => {
    expect(files.sort()).to.deep.equal([
      'active-conf.json',
      'availability.json',
      'deposit-request.json',
      'error-response.json',
      'initiation-response.json',
      'payout-request.json',
      'public-keys.json',
      'refund-request.json',
      'statement-initiation.json',
      'statement-request.json',
      'statement-status.json',
      'statement.json',
      'statements.json',
      'status-response.json',
      'transaction.json',
      'wallet-balances.json',
    ]);
    const names: ContractName[] = [
      'activeConf',
      'availability',
      'depositRequest',
      'errorResponse',
      'initiationResponse',
      'payoutRequest',
      'publicKeys',
      'refundRequest',
      'statusResponse',
      'transaction',
      'statementRequest',
      'statementInitiation',
      'statement',
      'statementStatus',
      'walletBalances',
    ];
    for (const n of names) expect(() => checkContract(n, {}), n).to.not.throw();
  });

  it('cites the reference URL for the schema and for every rule', () => {
    for (const f of files) {
      const schema = JSON.parse(readFileSync(path.join(DIR, f), 'utf8'));
      expect(schema.$comment, f).to.match(/https:\/\/docs\.pawapay\.io\//);
      expect(uncited(schema, f, []), f).to.deep.equal([]);
    }
    // the check can fail
    expect(
      uncited({ properties: { a: { type: 'string' }, b: { description: 'see https://x' } } }, 'x', []),
    ).to.deep.equal(['x/properties/a']);
  });

  it('reads status answers and callbacks as pawaPay sends them', () => {
    const id = '0b6e8f4e-3c1d-4a52-9f1e-2d7c5b8a9e10';
    expect(checkContract('statusResponse', { status: 'NOT_FOUND' }).ok).to.equal(true);
    expect(checkContract('statusResponse', { status: 'FOUND' }).ok).to.equal(false);
    expect(
      checkContract('statusResponse', {
        status: 'FOUND',
        data: { depositId: id, status: 'IN_RECONCILIATION', amount: '100.00', currency: 'CDF', extra: 1 },
      }).ok,
    ).to.equal(true);
    expect(
      checkContract('transaction', {
        refundId: id,
        depositId: id,
        status: 'FAILED',
        failureReason: { failureCode: 'UNSPECIFIED_FAILURE' },
      }).ok,
    ).to.equal(true);
    expect(checkContract('transaction', { status: 'COMPLETED' }).ok).to.equal(false);
    expect(checkContract('initiationResponse', { depositId: id, status: 'DUPLICATE_IGNORED' }).ok).to.equal(true);
    expect(checkContract('initiationResponse', { depositId: id, status: 'MAYBE' }).ok).to.equal(false);
    expect(checkContract('publicKeys', [{ id: 'k', key: '-----BEGIN PUBLIC KEY-----' }]).ok).to.equal(true);
    expect(
      checkContract('errorResponse', {
        status: 'REJECTED',
        failureReason: { failureCode: 'INVALID_INPUT', failureMessage: 'x' },
      }).ok,
    ).to.equal(true);
  });
});
