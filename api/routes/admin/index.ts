import Router from '@koa/router';
import { readJson } from '../../body';
import { validator } from '../../../shared/validation';
import { isId } from '../../../shared/domain/ids';
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
import { getMaintenance, setMaintenance } from '../../../shared/settings';
import { rememberMaintenance } from '../../middleware/maintenance';
import {
  createMerchantSchema,
  issueCredentialSchema,
  maintenanceSchema,
  revokeCredentialSchema,
  operatorClosuresSchema,
  rotateWebhookSecretSchema,
  updateMerchantSchema,
} from './schemas';
import { setClosures } from '../../../shared/availability/closures';
import { operatorAvailability } from '../../../shared/availability/read';
import { OPERATORS, type Operator } from '../../../shared/vocabulary';
import { DEFAULT_ROTATION_OVERLAP_SECONDS, rotateWebhookSecret } from '../../../shared/merchants/webhookSecrets';
import type { Direction } from '../../../shared/vocabulary';
import { KINDS } from '../../../shared/operationKinds';

const validateCreateMerchant = validator<MerchantInput & { name: string }>(createMerchantSchema);
const validateUpdateMerchant = validator<MerchantInput>(updateMerchantSchema);
const validateIssue = validator<{ environment: 'test' | 'live'; scope: 'read' | 'payments' | 'full'; ip_allowlist?: string[] }>(issueCredentialSchema);
const validateRevoke = validator<{ immediate?: boolean }>(revokeCredentialSchema);
const validateRotate = validator<{ environment: 'test' | 'live'; overlap_seconds?: number }>(rotateWebhookSecretSchema);
const validateClosures = validator<Partial<Record<Direction, 'closed' | 'operational'>>>(operatorClosuresSchema);
const validateMaintenance = validator<{ enabled: boolean; retry_after?: number }>(maintenanceSchema);

/** Operator API (decisions.md); mounted behind adminAuth. Webhook routes join in their own module. */
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
    ctx.body = await rotateWebhookSecret(ctx.services.db, ctx.params.id, input.environment, overlap, ctx.services.config.secretsKeys);
  })
  .post('/credentials/:id/revoke', async (ctx) => {
    if (!isId('credential', ctx.params.id)) throw new NotFound('Credential');
    const input = validateRevoke(await readJson(ctx));
    ctx.body = await revokeCredential(ctx.services.db, ctx.params.id, input.immediate === true, ctx.services.config.secretsKeys, ctx.services.clock.now());
  })
  // closes or opens an operator's directions; answers its availability row (live providers' figures)
  .put('/operators/:operator', async (ctx) => {
    const operator = ctx.params.operator as Operator;
    if (!OPERATORS.includes(operator)) throw new ValidationFailed('operator', `operator must be one of: ${OPERATORS.join(', ')}`);
    const change = validateClosures(await readJson(ctx));
    await setClosures(ctx.services, operator, change);
    const { db, clock, config } = ctx.services;
    [ctx.body] = await operatorAvailability(db, 'live', clock.now(), config.availability, operator);
  })
  .get('/attention', async (ctx) => {
    ctx.body = { object: 'list', data: await attentionList(ctx.services.db, KINDS, ctx.services.clock.now()) };
  })
  .get('/maintenance', async (ctx) => {
    ctx.body = await getMaintenance(ctx.services.db);
  })
  .put('/maintenance', async (ctx) => {
    const input = validateMaintenance(await readJson(ctx));
    const flag = await setMaintenance(ctx.services.db, { enabled: input.enabled, retry_after: input.retry_after ?? 300 });
    rememberMaintenance(ctx.services.caches, flag);
    ctx.body = flag;
  });
