import { badText, strictUtf8, TEXT_PROBLEM_MESSAGE } from '../../text';
import { ajv } from '../../validation';
import { CallbackFormatError } from '../errors';
import { PROVIDER_OBJECT_KINDS } from '../types';
import type { NormalisedCallback } from '../connector';

type ProviderCallback = Omit<NormalisedCallback, 'amount' | 'currency'>;

/**
 * The wire protocol between the HTTP adapter and a provider (the sandbox speaks it too).
 *
 *   POST {base}/v1/collections   {external_id, amount, currency, msisdn, callback_url, description}
 *   POST {base}/v1/refunds       {external_id, payment_external_id, payment_provider_ref, amount, currency, msisdn, callback_url}
 *   POST {base}/v1/payouts       {external_id, amount, currency, msisdn, callback_url, description}
 *        headers: Authorization: Bearer <api key>, Idempotency-Key: <external_id>
 *        → 2xx {provider_ref, status: "pending"}; 4xx {error: {code, message}}
 *   GET  {base}/v1/transactions/{external_id}
 *        → 200 {kind, external_id, provider_ref, status: pending|succeeded|failed|cancelled|expired, failure_code, failure_message}; 404
 *
 * Callback, POST {callback_url} with `X-Provider-Signature` (./signature.ts), body:
 *   {event_id, kind: payment|refund|payout, external_id, provider_ref, status: succeeded|failed|cancelled,
 *    failure_code, failure_message, occurred_at}
 */

export interface CallbackWire {
  event_id: string;
  kind: ProviderCallback['kind'];
  external_id: string;
  provider_ref: string | null;
  status: ProviderCallback['status'];
  failure_code: string | null;
  failure_message: string | null;
  occurred_at: number;
}

const NULLABLE_TEXT = { anyOf: [{ type: 'string', maxLength: 500 }, { type: 'null' }] } as const;

const callbackSchema = {
  type: 'object',
  required: ['event_id', 'kind', 'external_id', 'status'],
  // providers add fields over time: unknown ones are kept in the raw body, not refused
  additionalProperties: true,
  properties: {
    event_id: { type: 'string', minLength: 1, maxLength: 200 },
    kind: { type: 'string', enum: PROVIDER_OBJECT_KINDS },
    external_id: { type: 'string', minLength: 1, maxLength: 100 },
    provider_ref: NULLABLE_TEXT,
    status: { type: 'string', enum: ['succeeded', 'failed', 'cancelled'] },
    failure_code: NULLABLE_TEXT,
    failure_message: NULLABLE_TEXT,
    occurred_at: { type: 'integer' },
  },
} as const;

const validateCallback = ajv.compile(callbackSchema);

/**
 * A callback body is UTF-8 JSON without NUL or lone surrogates (docs/decisions.md#faults-and-limits): anything
 * else is `notJson` (400, nothing stored), as the inbox keeps raw text Postgres could not store.
 */
export function parseCallbackBody(raw: Buffer): ProviderCallback {
  let body: unknown;
  try {
    body = JSON.parse(strictUtf8.decode(raw));
  } catch {
    throw new CallbackFormatError('callback body is not JSON in UTF-8', true);
  }
  const bad = badText(body);
  if (bad) throw new CallbackFormatError(`callback ${bad.path || 'body'} ${TEXT_PROBLEM_MESSAGE[bad.problem]}`, true);
  if (!validateCallback(body)) {
    const err = validateCallback.errors![0];
    throw new CallbackFormatError(`callback ${err.instancePath || 'body'} ${err.message ?? 'is invalid'}`);
  }
  const b = body as unknown as CallbackWire;
  return {
    eventId: b.event_id,
    kind: b.kind,
    objectId: b.external_id,
    status: b.status,
    providerRef: b.provider_ref ?? null,
    failureCode: b.failure_code ?? null,
    failureMessage: b.failure_message ?? null,
  };
}
