import Router from '@koa/router';
import type { Context } from 'koa';
import { readJson, readRawBody, PAYMENT_BODY_LIMIT } from '../../body';
import { closedObject } from '../../routeTable';
import { MONEY, validator } from '../../../shared/validation';
import { UUID_V4_RE } from '../../../shared/ids';
import { BadRequest, Conflict, DomainError } from '../../../shared/errors';
import {
  IdempotencyKeyHeld,
  readIdempotencyKey,
  storeIdempotentResponse,
  type IdempotentWrite,
  type StoredResponse,
} from '../../../shared/idempotency';
import { canonicalPath } from '../../pipeline/request';
import { jsonAnswer, releasesKey, requestHash } from '../../pipeline/idempotency';
import { httpError, sendError } from '../../middleware/errors';
import {
  createOperatorRefund,
  paymentOwner,
  type OperatorRefundInput,
  type PaymentOwner,
} from '../../../shared/refunds/operator';
import type { RefundObject } from '../../../shared/refunds/view';

const validateRefund = validator<OperatorRefundInput>(
  closedObject(
    {
      amount: { ...MONEY, description: 'Minor units; default: all that is not refunded yet' },
      reason: { type: 'string', maxLength: 500 },
    },
    ['amount', 'reason'],
  ),
);

/**
 * The operator's Idempotency-Key: required (400 idempotency-key-required), a UUID v4 (400
 * idempotency-key-invalid). Required where the merchant's refund takes it optionally: the operator
 * API has no signed-request replay guard (docs/decisions.md#replayed-signed-requests) to stop a
 * retried request from being a second refund.
 */
function operatorKey(ctx: Context): string {
  const presented = ctx.get('Idempotency-Key');
  if (!presented) throw new BadRequest('idempotency-key-required', 'The Idempotency-Key header is required');
  if (!UUID_V4_RE.test(presented))
    throw new BadRequest('idempotency-key-invalid', 'The Idempotency-Key must be a UUID v4');
  return presented.toLowerCase();
}

function send(ctx: Context, r: StoredResponse, replayed = false): void {
  ctx.body = r.body;
  ctx.status = r.status;
  ctx.remove('Content-Type');
  ctx.set(r.headers);
  if (replayed) ctx.set('Idempotent-Replayed', 'true');
}

/**
 * Runs `work` with the request's key written in its transaction, with the rules of the merchant's
 * keys (docs/decisions.md#merchant-pipeline), held per merchant and environment of the payment:
 * the same request again gets the first answer byte for byte (`Idempotent-Replayed: true`);
 * another body with the key, 409 idempotency-conflict; one still running past the wait, 409
 * idempotency-in-progress. A refusal that wrote nothing (404, 409, 422) is stored under the key;
 * a 400 or 5xx frees it.
 */
async function withOperatorKey(
  ctx: Context,
  presented: string,
  owner: PaymentOwner,
  status: number,
  work: (key: IdempotentWrite<RefundObject>) => Promise<void>,
): Promise<void> {
  const { db, config, clock } = ctx.services;
  let stored: StoredResponse | undefined;
  const key: IdempotentWrite<RefundObject> = {
    id: { merchantId: owner.merchantId, environment: owner.environment, key: presented },
    request: {
      method: ctx.method,
      path: canonicalPath(ctx.path),
      hash: requestHash(ctx.method, ctx.path, await readRawBody(ctx, PAYMENT_BODY_LIMIT)),
    },
    waitMs: config.idempotencyWaitMs,
    now: clock.now(),
    encode: (result) => (stored = jsonAnswer(status, result)),
  };
  const answerHeld = async () => {
    const held = await readIdempotencyKey(db, key.id, key.request, clock.now());
    if (held?.kind === 'replay') return send(ctx, held.response, true);
    if (held?.kind === 'conflict')
      throw new Conflict('idempotency-conflict', 'This Idempotency-Key was already used with a different request');
    throw new Conflict('idempotency-in-progress', 'A request with this Idempotency-Key is still being processed', {
      retryAfter: 1,
    });
  };
  try {
    await work(key);
  } catch (err) {
    if (err instanceof IdempotencyKeyHeld) return answerHeld();
    if (!(err instanceof DomainError) || releasesKey(httpError(err).status)) throw err;
    sendError(ctx, err);
    const refusal = jsonAnswer(ctx.status, ctx.body);
    send(ctx, refusal);
    if (!(await storeIdempotentResponse(db, key, refusal))) return answerHeld();
    return;
  }
  if (stored) send(ctx, stored);
}

/** Operator refunds (docs/decisions.md#operator-admin-api); mounted behind adminAuth. */
export const refundsAdminRouter = new Router({ prefix: '/admin' }).post('/payments/:id/refunds', async (ctx) => {
  // 400 for the key and the body first; then 404 for the payment
  const presented = operatorKey(ctx);
  const input = validateRefund(await readJson(ctx));
  const owner = await paymentOwner(ctx.services.db, ctx.params.id);
  const { db, outbox, clock, config, providers } = ctx.services;
  await withOperatorKey(ctx, presented, owner, 201, async (key) => {
    await createOperatorRefund(
      {
        db,
        outbox,
        clock,
        log: ctx.state.log,
        providerWindowMs: (environment) => config.providerWindowMs[environment],
        providers,
      },
      ctx.params.id,
      input,
      ctx.state.requestId,
      key,
    );
  });
});
