import type { ErrorObject, ValidateFunction } from 'ajv';
import { ajv } from '../../../validation';
import answer from './answer.schema.json';
import callback from './callback.schema.json';
import collectionRequest from './collection-request.schema.json';
import disbursementRequest from './disbursement-request.schema.json';
import enquiryResponse from './enquiry-response.schema.json';
import headers from './headers.schema.json';
import refundRequest from './refund-request.schema.json';
import tokenRequest from './token-request.schema.json';
import tokenResponse from './token-response.schema.json';

/**
 * The contract with Airtel, written from its public reference (each rule cites it): every
 * request the connector sends and every answer or callback it reads. Compiled once, with the
 * service's ajv (shared/validation.ts), and used by both sides: the connector checks what it
 * sends and reads, the simulator refuses what Airtel would refuse.
 */
export const AIRTEL_SCHEMAS = {
  headers,
  tokenRequest,
  tokenResponse,
  collectionRequest,
  refundRequest,
  disbursementRequest,
  answer,
  enquiryResponse,
  callback,
} as const;

export type AirtelSchemaName = keyof typeof AIRTEL_SCHEMAS;

const compiled = new Map<AirtelSchemaName, ValidateFunction>();

function compile(name: AirtelSchemaName): ValidateFunction {
  let v = compiled.get(name);
  if (!v) {
    const schema = AIRTEL_SCHEMAS[name] as { $id: string };
    v = (ajv.getSchema(schema.$id) as ValidateFunction | undefined) ?? ajv.compile(schema);
    compiled.set(name, v);
  }
  return v;
}

export interface SchemaProblem {
  /** where: "/transaction/amount", or "" for the whole */
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
export function check(name: AirtelSchemaName, data: unknown): SchemaProblem[] {
  const v = compile(name);
  return v(data) ? [] : (v.errors ?? []).map(problemOf);
}
