import { schemaChecker } from '../../schemaCheck';
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
export type { SchemaProblem } from '../../schemaCheck';

/** The problems of `data` against one of the schemas; empty when it conforms. */
export const check = schemaChecker(AIRTEL_SCHEMAS);
