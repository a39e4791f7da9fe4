import type { ErrorObject, ValidateFunction } from 'ajv';
import { ajv } from '../../../validation';
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

// transaction-answer first: order-answer refers to it by $id
for (const schema of [transactionAnswer, ...Object.values(MPGS_SCHEMAS).filter((s) => s !== transactionAnswer)]) {
  if (!ajv.getSchema(schema.$id)) ajv.addSchema(schema);
}

const compiled = new Map<MpgsSchemaName, ValidateFunction>();

function compile(name: MpgsSchemaName): ValidateFunction {
  let v = compiled.get(name);
  if (!v) {
    v = ajv.getSchema(MPGS_SCHEMAS[name].$id) as ValidateFunction;
    compiled.set(name, v);
  }
  return v;
}

export interface SchemaProblem {
  /** where: "/order/amount", or "" for the whole */
  path: string;
  keyword: string;
  message: string;
}

const problemOf = (e: ErrorObject): SchemaProblem => {
  const child =
    (e.params as { additionalProperty?: string; missingProperty?: string }).additionalProperty ??
    (e.params as { missingProperty?: string }).missingProperty;
  return {
    path: child ? `${e.instancePath}/${child}` : e.instancePath,
    keyword: e.keyword,
    message: e.message ?? 'is invalid',
  };
};

/** The problems of `data` against a schema; empty when it conforms. */
export function check(name: MpgsSchemaName, data: unknown): SchemaProblem[] {
  const v = compile(name);
  return v(data) ? [] : (v.errors ?? []).map(problemOf);
}

/** One line for a log or an error message: where and what (never the value). */
export function describeProblems(problems: SchemaProblem[]): string {
  const p = problems[0];
  if (!p) return 'valid';
  return `${p.path || '(root)'} ${p.message}`;
}
