import Router from '@koa/router';
import { BadRequest, NotFound, Unauthenticated, ValidationFailed } from '../shared/errors';
import { CallbackFormatError } from '../shared/providers/errors';
import { storeCallback } from '../shared/providers/inbox';
import { readRawBody } from './body';
import type { Db } from '../shared/db/knex';
import { KINDS } from '../shared/kindRegistry';
import type { ProviderObjectKind } from '../shared/providers/types';
import { tracingOn, withTraceparent } from '../shared/tracing/spans';
import { checkContract, describeErrors } from '../shared/providers/pawapay/contract';
import { announceStatement } from '../shared/reconciliation/statementWake';
import type { CallbackRequest, Verification } from '../shared/providers/connector';

/** No provider notification comes near this; the cap bounds what an anonymous caller makes us buffer. */
export const CALLBACK_BODY_LIMIT = 64 * 1024;

/**
 * POST /callbacks/{provider}: provider callbacks, outside the merchant pipeline (no merchant
 * key, no rate limit). The provider's connector verifies it by its own scheme (401 otherwise,
 * nothing stored) and parses it into our normalised form; it is stored in the inbox (raw, and
 * normalised) with the job that applies it, and answered at once as the provider expects. An
 * unsigned callback (an account without signatures) is stored unverified: the kernel confirms
 * it by a status query before anything is applied. A notification that decides nothing is
 * answered and not stored.
 */
export const callbacksRouter = new Router({ prefix: '/callbacks' });

/**
 * POST /callbacks/pawapay/statements: pawaPay's statement callback (the URL a statement request
 * names). Verified as pawaPay's other callbacks are, for its own URL (401 otherwise); its body is
 * checked against the statement schema; it only wakes the run that waits for the statement
 * (docs/reconciliation.md#statements), which then asks pawaPay for the statement's status itself.
 */
callbacksRouter.post('/pawapay/statements', async (ctx) => {
  const provider = ctx.services.providers.byProviderId('pawapay') as
    { verifyStatementCallback?: (req: CallbackRequest) => Promise<Verification> } | undefined;
  if (!provider?.verifyStatementCallback) throw new NotFound('Provider');
  const raw = await readRawBody(ctx, CALLBACK_BODY_LIMIT);
  const verification = await provider.verifyStatementCallback({
    raw,
    headers: ctx.headers,
    ip: ctx.ip,
    nowUnix: Math.floor(ctx.services.clock.now() / 1000),
  });
  if (verification === 'invalid')
    throw new Unauthenticated('signature-invalid', 'The callback signature is missing, invalid or expired');
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new BadRequest('invalid-json', 'The callback body is not valid JSON');
  }
  const check = checkContract('statement', body);
  if (!check.ok) throw new ValidationFailed('body', `pawaPay statement callback: ${describeErrors(check.errors)}`);
  const { statementId, status } = body as { statementId: string; status: string };
  await announceStatement(ctx.services, 'pawapay', statementId).catch((err: Error) =>
    // the run's poll finds it all the same
    ctx.state.log.warn({ statementId, err: { message: err.message } }, 'statement callback not announced'),
  );
  ctx.state.log.info({ provider: 'pawapay', statementId, status, verification }, 'statement callback received');
  ctx.status = 200;
  ctx.body = '';
});

callbacksRouter.post('/:provider', async (ctx) => {
  const provider = ctx.services.providers.byProviderId(ctx.params.provider);
  if (!provider) throw new NotFound('Provider');
  const raw = await readRawBody(ctx, CALLBACK_BODY_LIMIT);
  const verification = await provider.verifyCallback({
    raw,
    headers: ctx.headers,
    ip: ctx.ip,
    nowUnix: Math.floor(ctx.services.clock.now() / 1000),
  });
  if (verification === 'invalid')
    throw new Unauthenticated('signature-invalid', 'The callback signature is missing, invalid or expired');
  let parsed;
  try {
    parsed = provider.parseCallback(raw, ctx.headers);
  } catch (err) {
    if (!(err instanceof CallbackFormatError)) throw err;
    throw err.notJson
      ? new BadRequest(
          'invalid-json',
          'The callback body is not valid JSON in UTF-8, or holds a NUL character or a lone surrogate',
        )
      : new ValidationFailed('body', err.message);
  }
  const answer = provider.callbackAnswer();
  ctx.status = answer.status;
  if (parsed === 'ignore') {
    ctx.body = answer.body ?? '';
    return;
  }
  // a provider that forwards no trace context (a live one): the callback joins the trace its operation was created in
  const joined = ctx.get('traceparent')
    ? null
    : await operationTraceparent(ctx.services.db, parsed.kind, parsed.objectId);
  const deps = {
    db: ctx.services.db,
    outbox: ctx.services.outbox,
    batches: ctx.services.batches,
    log: ctx.state.log,
    clock: ctx.services.clock,
  };
  const stored = parsed;
  const id = await withTraceparent(joined, () =>
    storeCallback(deps, provider, raw, stored, verification, ctx.state.requestId),
  );
  ctx.state.log.info(
    { callbackId: id, provider: provider.id, kind: parsed.kind, objectId: parsed.objectId, verification },
    'callback stored',
  );
  ctx.status = answer.status;
  ctx.body = answer.body ?? '';
});

/** The trace context an operation was created in; nothing is read while traces are off. */
async function operationTraceparent(db: Db, kind: ProviderObjectKind, id: string): Promise<string | null> {
  const model = tracingOn() ? KINDS[kind]?.model : undefined;
  if (!model) return null;
  const row = (await model
    .query(db)
    .findById(id)
    .select('traceparent')
    .catch(() => undefined)) as { traceparent?: string | null } | undefined;
  return row?.traceparent ?? null;
}
