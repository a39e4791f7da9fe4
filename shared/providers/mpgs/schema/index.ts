import { ajv } from '../../../validation';
import { schemaChecker, type SchemaProblem } from '../../schemaCheck';
import authenticatePayerRequest from './authenticate-payer-request.schema.json';
import createSessionRequest from './create-session-request.schema.json';
import error from './error.schema.json';
import initiateAuthenticationRequest from './initiate-authentication-request.schema.json';
import orderAnswer from './order-answer.schema.json';
import payRequest from './pay-request.schema.json';
import refundRequest from './refund-request.schema.json';
import sessionAnswer from './session-answer.schema.json';
import transactionAnswer from './transaction-answer.schema.json';
import updateSessionRequest from './update-session-request.schema.json';
import voidRequest from './void-request.schema.json';

/**
 * The contract with the Mastercard Gateway REST API version 100, written from its public
 * reference (each rule cites it): every request the connector sends and every answer or
 * notification it reads. Compiled once with the service's ajv (shared/validation.ts) and used by
 * both sides: the client checks what it sends and reads, the simulator refuses what it receives
 * out of contract, with the gateway's own error shape.
 */
export const MPGS_SCHEMAS = {
  createSessionRequest,
  updateSessionRequest,
  sessionAnswer,
  initiateAuthenticationRequest,
  authenticatePayerRequest,
  payRequest,
  refundRequest,
  voidRequest,
  transactionAnswer,
  orderAnswer,
  error,
} as const;

export type MpgsSchemaName = keyof typeof MPGS_SCHEMAS;
export type { SchemaProblem } from '../../schemaCheck';

// transaction-answer first: order-answer refers to it by $id
for (const schema of [transactionAnswer, ...Object.values(MPGS_SCHEMAS).filter((s) => s !== transactionAnswer)]) {
  if (!ajv.getSchema(schema.$id)) ajv.addSchema(schema);
}

/** The problems of `data` against one of the schemas; empty when it conforms. */
export const check = schemaChecker(MPGS_SCHEMAS);

/** One line for a log or an error message: where and what (never the value). */
export function describeProblems(problems: SchemaProblem[]): string {
  const p = problems[0];
  if (!p) return 'valid';
  return `${p.path || '(root)'} ${p.message}`;
}
