import type { ErrorObject, ValidateFunction } from 'ajv';
import { ajv } from '../../validation';
import activeConf from './schema/active-conf.json';
import availability from './schema/availability.json';
import depositRequest from './schema/deposit-request.json';
import errorResponse from './schema/error-response.json';
import initiationResponse from './schema/initiation-response.json';
import payoutRequest from './schema/payout-request.json';
import publicKeys from './schema/public-keys.json';
import refundRequest from './schema/refund-request.json';
import statusResponse from './schema/status-response.json';
import transaction from './schema/transaction.json';
import statementDefinitions from './schema/statements.json';
import statementRequest from './schema/statement-request.json';
import statementInitiation from './schema/statement-initiation.json';
import statement from './schema/statement.json';
import statementStatus from './schema/statement-status.json';
import walletBalances from './schema/wallet-balances.json';

/**
 * The pawaPay v2 contract as JSON Schemas (./schema, each rule citing the reference): what the
 * connector sends and reads. The connector's tests validate every request it sends with these,
 * and the simulator validates every request it receives with the very same functions.
 */

const SCHEMAS = {
  activeConf,
  availability,
  depositRequest,
  errorResponse,
  initiationResponse,
  payoutRequest,
  publicKeys,
  refundRequest,
  statusResponse,
  transaction,
  statementRequest,
  statementInitiation,
  statement,
  statementStatus,
  walletBalances,
};
export type ContractName = keyof typeof SCHEMAS;

// referred to by $id first: transaction (status-response), the statements' definitions, statement (statement-status)
const FIRST: { $id: string }[] = [transaction, statementDefinitions, statement];
for (const schema of [...FIRST, ...Object.values(SCHEMAS).filter((s) => !FIRST.includes(s))]) {
  if (!ajv.getSchema(schema.$id)) ajv.addSchema(schema);
}

const compiled = new Map<ContractName, ValidateFunction>();
function validatorOf(name: ContractName): ValidateFunction {
  let v = compiled.get(name);
  if (!v) {
    v = ajv.getSchema(SCHEMAS[name].$id) as ValidateFunction;
    compiled.set(name, v);
  }
  return v;
}

export interface ContractResult {
  ok: boolean;
  /** ajv's errors (all of them would need allErrors; the first one is enough to refuse) */
  errors: ErrorObject[];
}

export function checkContract(name: ContractName, data: unknown): ContractResult {
  const validate = validatorOf(name);
  const ok = validate(data);
  return { ok, errors: ok ? [] : [...(validate.errors ?? [])] };
}

/** A one-line account of the first error, for a test's message or the simulator's failureMessage. */
export function describeErrors(errors: ErrorObject[]): string {
  const e = errors[0];
  if (!e) return 'valid';
  const at = e.instancePath || '(root)';
  const extra =
    (e.params as { additionalProperty?: string; missingProperty?: string }).additionalProperty ??
    (e.params as { missingProperty?: string }).missingProperty;
  return `${at} ${e.message ?? e.keyword}${extra ? `: ${extra}` : ''}`;
}

export const REQUEST_CONTRACT: Record<'/v2/deposits' | '/v2/payouts' | '/v2/refunds', ContractName> = {
  '/v2/deposits': 'depositRequest',
  '/v2/payouts': 'payoutRequest',
  '/v2/refunds': 'refundRequest',
};
