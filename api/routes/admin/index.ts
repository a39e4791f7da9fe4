import Router from '@koa/router';
import { readJson } from '../../body';
import { closedObject } from '../../routeTable';
import { MONEY, validator } from '../../../shared/validation';
import { MAX_AMOUNT } from '../../../shared/money';
import { isId } from '../../../shared/ids';
import { NotFound, ValidationFailed } from '../../../shared/errors';
import {
  createMerchant,
  getMerchant,
  issueCredential,
  revokeCredential,
  updateMerchant,
  type MerchantInput,
} from '../../../shared/merchants/service';
import { attentionList } from '../../../shared/operations/attention';
import { getMaintenance, setMaintenance } from '../../../shared/maintenance';
import { rememberMaintenance } from '../../middleware/maintenance';
import { setClosures } from '../../../shared/availability/closures';
import { operatorAvailability } from '../../../shared/availability/read';
import { OPERATORS, type Direction, type Operator } from '../../../shared/vocabulary';
import { DEFAULT_ROTATION_OVERLAP_SECONDS, rotateWebhookSecret } from '../../../shared/merchants/webhookSecrets';
import { KINDS } from '../../../shared/kindRegistry';
import { reconciliationAttention } from '../../../shared/reconciliation/read';

const FEE_RULE = closedObject({
  percent_bps: { type: 'integer', minimum: 0, maximum: 10000 },
  fixed: { type: 'integer', minimum: 0, maximum: MAX_AMOUNT },
});

/** A per-transaction limit: 1 to 10^12 minor units, or null (no limit of the merchant's own; amounts stay at most 10^12). */
const LIMIT = { anyOf: [MONEY, { type: 'null' }] } as const;

const MERCHANT_FIELDS = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  fee_bearer: { type: 'string', enum: ['merchant', 'customer'] },
  fees: { type: 'object', additionalProperties: false, properties: { USD: FEE_RULE, CDF: FEE_RULE } },
  per_tx_limit_usd: LIMIT,
  per_tx_limit_cdf: LIMIT,
} as const;

const ENVIRONMENT = { type: 'string', enum: ['test', 'live'] } as const;
const DIRECTION_STATE = { type: 'string', enum: ['closed', 'operational'] } as const;

const validateCreateMerchant = validator<MerchantInput & { name: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: MERCHANT_FIELDS,
});

const validateUpdateMerchant = validator<MerchantInput>({
  type: 'object',
  additionalProperties: false,
  properties: { ...MERCHANT_FIELDS, status: { type: 'string', enum: ['active', 'suspended'] } },
});

const validateIssue = validator<{
  environment: 'test' | 'live';
  scope: 'read' | 'payments' | 'full';
  ip_allowlist?: string[];
}>(
  closedObject(
    {
      environment: ENVIRONMENT,
      scope: { type: 'string', enum: ['read', 'payments', 'full'] },
      ip_allowlist: { type: 'array', maxItems: 100, items: { type: 'string', maxLength: 64 } },
    },
    ['ip_allowlist'],
  ),
);

const validateRevoke = validator<{ immediate?: boolean }>({
  type: 'object',
  additionalProperties: false,
  properties: { immediate: { type: 'boolean' } },
});

const validateRotate = validator<{ environment: 'test' | 'live'; overlap_seconds?: number }>(
  closedObject(
    {
      environment: ENVIRONMENT,
      // how long the replaced secret keeps signing beside the new one; at most 30 days
      overlap_seconds: { type: 'integer', minimum: 0, maximum: 2_592_000 },
    },
    ['overlap_seconds'],
  ),
);

const validateClosures = validator<Partial<Record<Direction, 'closed' | 'operational'>>>({
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { collection: DIRECTION_STATE, payout: DIRECTION_STATE, refund: DIRECTION_STATE },
});

const validateMaintenance = validator<{ enabled: boolean; retry_after?: number }>(
  closedObject({ enabled: { type: 'boolean' }, retry_after: { type: 'integer', minimum: 1, maximum: 86400 } }, [
    'retry_after',
  ]),
);

/** Operator API (docs/decisions.md#operator-admin-api); mounted behind adminAuth. Webhook routes join in their own module. */
export const adminRouter = new Router({ prefix: '/admin' })
  .post('/merchants', async (ctx) => {
    const input = validateCreateMerchant(await readJson(ctx));
    ctx.status = 201;
    ctx.body = await createMerchant(ctx.services.db, input);
  })
  .get('/merchants/:id', async (ctx) => {
    if (!isId('merchant', ctx.params.id)) throw new NotFound('Merchant');
    ctx.body = await getMerchant(ctx.services.db, ctx.params.id);
  })
  .patch('/merchants/:id', async (ctx) => {
    if (!isId('merchant', ctx.params.id)) throw new NotFound('Merchant');
    const input = validateUpdateMerchant(await readJson(ctx));
    ctx.body = await updateMerchant(ctx.services.db, ctx.params.id, input, ctx.services.clock.now());
  })
  .post('/merchants/:id/credentials', async (ctx) => {
    if (!isId('merchant', ctx.params.id)) throw new NotFound('Merchant');
    const input = validateIssue(await readJson(ctx));
    ctx.status = 201;
    ctx.body = await issueCredential(ctx.services.db, ctx.params.id, input, ctx.services.config.secretsKeys);
  })
  .post('/merchants/:id/webhook-secret/rotate', async (ctx) => {
    if (!isId('merchant', ctx.params.id)) throw new NotFound('Merchant');
    const input = validateRotate(await readJson(ctx));
    const overlap = input.overlap_seconds ?? DEFAULT_ROTATION_OVERLAP_SECONDS;
    ctx.body = await rotateWebhookSecret(
      ctx.services.db,
      ctx.params.id,
      input.environment,
      overlap,
      ctx.services.config.secretsKeys,
    );
  })
  .post('/credentials/:id/revoke', async (ctx) => {
    if (!isId('credential', ctx.params.id)) throw new NotFound('Credential');
    const input = validateRevoke(await readJson(ctx));
    ctx.body = await revokeCredential(
      ctx.services.db,
      ctx.params.id,
      input.immediate === true,
      ctx.services.config.secretsKeys,
      ctx.services.clock.now(),
    );
  })
  // closes or opens an operator's directions; answers its availability row (live providers' figures)
  .put('/operators/:operator', async (ctx) => {
    const operator = ctx.params.operator as Operator;
    if (!OPERATORS.includes(operator))
      throw new ValidationFailed('operator', `operator must be one of: ${OPERATORS.join(', ')}`);
    const change = validateClosures(await readJson(ctx));
    await setClosures(ctx.services, operator, change);
    const { db, clock, config } = ctx.services;
    [ctx.body] = await operatorAvailability(
      db,
      ctx.services.providers,
      'live',
      clock.now(),
      config.availability,
      operator,
    );
  })
  .get('/attention', async (ctx) => {
    const now = ctx.services.clock.now();
    // the kernel's (open past bound, contradictions), then the reconciliation's mismatches (docs/reconciliation.md)
    const data = [
      ...(await attentionList(ctx.services.db, KINDS, now)),
      ...(await reconciliationAttention(ctx.services.db, now)),
    ];
    ctx.body = { object: 'list', data };
  })
  .get('/maintenance', async (ctx) => {
    ctx.body = await getMaintenance(ctx.services.db);
  })
  .put('/maintenance', async (ctx) => {
    const input = validateMaintenance(await readJson(ctx));
    const flag = await setMaintenance(ctx.services.db, {
      enabled: input.enabled,
      retry_after: input.retry_after ?? 300,
    });
    rememberMaintenance(ctx.services.caches, flag);
    ctx.body = flag;
  });
