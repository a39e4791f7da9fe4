import { createHash } from 'node:crypto';
import type { Caller } from '../caller';
import type { Config } from '../config';
import type { ProviderRegistry } from '../providers/registry';
import type { Db, Executor } from '../db/knex';
import type { Batches } from '../db/coalescer';
import type { Caches } from '../ttlCache';
import type { TransactDeps } from '../db/transact';
import { isId, newId } from '../ids';
import { Gone, NotFound, ValidationFailed } from '../errors';
import { PaymentLink } from '../db/models';
import { pageQuery, parseCursor, parseLimit, toPage } from '../db/pagination';
import {
  IdempotencyKeyHeld,
  idempotentTransact,
  readIdempotencyKey,
  type IdempotentRequest,
  type IdempotentWrite,
} from '../idempotency';
import { createPayment } from '../payments/create';
import type { PaymentView } from '../payments/view';
import type { PaymentRow } from '../db/rows';
import type { Operator } from '../vocabulary';
import type { CreatePaymentLinkInput, LinkMethod, ListPaymentLinksQuery } from './schemas';
import { inactiveReason, paymentLinkView, type PaymentLinkRead, type PaymentLinkView } from './view';

/**
 * Payment links (docs/decisions.md#payment-links). A link is a merchant's standing offer a
 * client pays through on the hosted page (/pay/{id}); each payment made through it is an ordinary
 * payment, created by shared/payments/create.ts (the merchant's fees, limits, closures, provider
 * routing and events), carrying `payment_link` and the reference `<link id>-<n>`.
 */

const USED_UP = `exists (select 1 from payments p where p.payment_link = payment_links.id and p.status in ('succeeded', 'refunded')) as used_up`;

const withUsedUp = (db: Executor) => PaymentLink.query(db).select('payment_links.*', PaymentLink.raw(USED_UP));

/** Cross-field rules the schema cannot say: a fixed amount takes no bounds, bounds in order, an expiry ahead, https in live. */
function checkLink(input: CreatePaymentLinkInput, caller: Caller, nowMs: number): void {
  if (input.amount !== undefined) {
    for (const f of ['min_amount', 'max_amount'] as const)
      if (input[f] !== undefined) throw new ValidationFailed(f, `${f} is for open-amount links only (no amount)`);
  }
  if (input.min_amount !== undefined && input.max_amount !== undefined && input.min_amount > input.max_amount) {
    throw new ValidationFailed('max_amount', 'max_amount must be at least min_amount');
  }
  if (input.expires_at !== undefined && input.expires_at * 1000 <= nowMs)
    throw new ValidationFailed('expires_at', 'expires_at must be in the future');
  if (caller.environment === 'live' && input.return_url !== undefined && !input.return_url.startsWith('https://')) {
    throw new ValidationFailed('return_url', 'return_url must be an https URL for live links');
  }
}

/** POST /v1/payment_links: the link with its Idempotency-Key, in one transaction. */
export async function createPaymentLink(
  deps: TransactDeps & { config: Config },
  caller: Caller,
  input: CreatePaymentLinkInput,
  key: IdempotentWrite<PaymentLinkView>,
): Promise<PaymentLinkView> {
  const now = deps.clock.now();
  checkLink(input, caller, now);
  const row: PaymentLinkRead = {
    id: newId('paymentLink'),
    merchant_id: caller.merchantId,
    environment: caller.environment,
    currency: input.currency,
    amount: input.amount ?? null,
    min_amount: input.min_amount ?? null,
    max_amount: input.max_amount ?? null,
    description: input.description,
    methods: input.methods ?? ['mobile_money', 'card'],
    single_use: input.single_use ?? false,
    expires_at: input.expires_at ?? null,
    return_url: input.return_url ?? null,
    metadata: input.metadata ?? {},
    created: Math.floor(now / 1000),
    deactivated: null,
    payments_made: 0,
    used_up: false,
  };
  return idempotentTransact(deps, key, async (trx) => {
    const { used_up: _, ...columns } = row;
    await PaymentLink.query(trx).insert(columns);
    return paymentLinkView(row, deps.config.baseUrl, now);
  });
}

async function ownLink(db: Executor, viewer: Caller, id: string): Promise<PaymentLinkRead> {
  if (!isId('paymentLink', id)) throw new NotFound('Payment link');
  const row = (await withUsedUp(db).findOne({
    id,
    merchant_id: viewer.merchantId,
    environment: viewer.environment,
  })) as PaymentLinkRead | undefined;
  if (!row) throw new NotFound('Payment link');
  return row;
}

export async function getPaymentLink(
  db: Executor,
  viewer: Caller,
  id: string,
  baseUrl: string,
  nowMs: number,
): Promise<PaymentLinkView> {
  return paymentLinkView(await ownLink(db, viewer, id), baseUrl, nowMs);
}

export async function listPaymentLinks(
  db: Executor,
  viewer: Caller,
  query: ListPaymentLinksQuery,
  baseUrl: string,
  nowMs: number,
) {
  const limit = parseLimit(query.limit);
  const cursor = parseCursor(query.cursor, 'plink_');
  const q = withUsedUp(db).where({ merchant_id: viewer.merchantId, environment: viewer.environment });
  const rows = (await pageQuery(q, cursor, limit)) as unknown as PaymentLinkRead[];
  return toPage(rows, limit, (r) => paymentLinkView(r, baseUrl, nowMs));
}

/**
 * POST /v1/payment_links/{id}/deactivate: the link takes no more payments (those open go on to
 * their end). Deactivating again answers the link as it is; a link already expired or used up
 * answers 410 `link-inactive`, as every API use of an inactive link.
 */
export async function deactivatePaymentLink(
  db: Db,
  viewer: Caller,
  id: string,
  baseUrl: string,
  nowMs: number,
): Promise<PaymentLinkView> {
  const link = await ownLink(db, viewer, id);
  const reason = inactiveReason(link, nowMs);
  if (reason === 'deactivated') return paymentLinkView(link, baseUrl, nowMs);
  if (reason) throw new Gone('link-inactive', `This payment link is ${reason === 'used_up' ? 'used up' : reason}`);
  const deactivated = Math.floor(nowMs / 1000);
  await PaymentLink.query(db)
    .findById(id)
    .whereNull('deactivated')
    .patch({ deactivated, updated_at: new Date(nowMs) } as Partial<PaymentLink>);
  return paymentLinkView({ ...link, deactivated }, baseUrl, nowMs);
}

/**
 * A link as its page shows it: any merchant's (the unguessable id is the client's only key),
 * with the merchant's name; a suspended merchant's links take no payment (shown as deactivated).
 */
export type PageLink = PaymentLinkRead & { merchant_name: string };

export async function findPageLink(db: Executor, id: string): Promise<PageLink | undefined> {
  if (!isId('paymentLink', id)) return undefined;
  const link = (await withUsedUp(db)
    .join('merchants as m', 'm.id', 'payment_links.merchant_id')
    .select('m.name as merchant_name', 'm.status as merchant_status')
    .findOne({ 'payment_links.id': id })) as (PageLink & { merchant_status: string }) | undefined;
  if (!link) return undefined;
  const { merchant_status, ...rest } = link;
  // the merchant API refuses a suspended merchant (403 merchant-suspended); its links stop too
  return merchant_status === 'active' ? rest : { ...rest, deactivated: rest.deactivated ?? rest.created };
}

/** What the client submits on the page. */
export interface LinkPayment {
  method: LinkMethod;
  /** minor units; the link's own amount when it has one */
  amount?: number;
  operator?: Operator;
  /** MSISDN (the page normalised what was typed) */
  phone?: string;
  customer_name?: string;
  customer_email?: string;
}

type PayDeps = TransactDeps & {
  config: Config;
  batches: Batches;
  caches: Caches;
  providers: Pick<ProviderRegistry, 'route' | 'cardRoute'>;
};

/** The key a page submission is written under: the form's token, one payment per token whatever is posted with it. */
function formKey(
  link: PageLink,
  attempt: string,
  config: Config,
  now: number,
): Omit<IdempotentWrite<PaymentView>, 'encode'> {
  const request: IdempotentRequest = {
    method: 'POST',
    path: `/pay/${link.id}`,
    hash: createHash('sha256').update(`payment-link\n${link.id}`).digest('hex'),
  };
  return {
    id: { merchantId: link.merchant_id, environment: link.environment, key: attempt },
    request,
    waitMs: config.idempotencyWaitMs,
    now,
  };
}

/**
 * The payment of a page attempt (the form token's UUID): the payment id once the attempt has
 * made one, `pending` while its creation is still under way, null when it made none.
 */
export async function attemptPayment(
  db: Db,
  link: PageLink,
  attempt: string,
  config: Config,
  now: number,
): Promise<`pay_${string}` | 'pending' | null> {
  const k = formKey(link, attempt, config, now);
  const held = await readIdempotencyKey(db, k.id, k.request, now);
  if (!held || held.kind === 'conflict') return null;
  if (held.kind === 'in-progress') return 'pending';
  return (JSON.parse(held.response.body.toString('utf8')) as { id: `pay_${string}` }).id;
}

/**
 * One payment through a link, for one page attempt: refused with 410 while the link takes no
 * payment, 400 for a method it does not take or an amount out of its bounds; then created by
 * createPayment under the attempt's key, so a double submit or a reload makes one payment.
 * `beforeCreate` runs once the request is known to create a payment (the page's push limits).
 */
export async function payThroughLink(
  deps: PayDeps,
  link: PageLink,
  attempt: string,
  input: LinkPayment,
  opts: { requestId?: string; returnUrl: string; beforeCreate?: () => Promise<void> },
): Promise<{ paymentId: string; created: boolean }> {
  const existing = await attemptPayment(deps.db, link, attempt, deps.config, deps.clock.now());
  if (existing !== null && existing !== 'pending') return { paymentId: existing, created: false };
  const reason = inactiveReason(link, deps.clock.now());
  if (reason) throw new Gone('link-inactive', `This payment link is ${reason === 'used_up' ? 'used up' : reason}`);
  if (!link.methods.includes(input.method))
    throw new ValidationFailed('method', `This link does not take ${input.method}`);
  const amount = link.amount ?? input.amount;
  if (amount === undefined || !Number.isSafeInteger(amount) || amount < 1)
    throw new ValidationFailed('amount', 'amount is required');
  if (link.amount === null) {
    if (link.min_amount !== null && amount < link.min_amount)
      throw new ValidationFailed('amount', `amount must be at least ${link.min_amount}`);
    if (link.max_amount !== null && amount > link.max_amount)
      throw new ValidationFailed('amount', `amount must be at most ${link.max_amount}`);
  }
  await opts.beforeCreate?.();
  // the link's n-th payment; a number taken by a refused creation is not given again
  const [{ payments_made: n }] = await deps
    .db('payment_links')
    .where({ id: link.id })
    .increment('payments_made', 1)
    .returning<{ payments_made: number }[]>('payments_made');
  const mobile = input.method === 'mobile_money';
  const key = formKey(link, attempt, deps.config, deps.clock.now());
  try {
    const view = await createPayment(
      deps,
      { merchantId: link.merchant_id, environment: link.environment, requestId: opts.requestId },
      {
        amount,
        currency: link.currency,
        method: input.method,
        ...(mobile
          ? { operator: input.operator, phone: input.phone }
          : { customer_name: input.customer_name, customer_email: input.customer_email, return_url: opts.returnUrl }),
        reference: `${link.id}-${n}`,
        description: link.description,
        metadata: link.metadata,
      },
      {
        ...key,
        encode: (v) => ({
          status: 201,
          headers: { 'Content-Type': 'application/json; charset=utf-8' },
          body: Buffer.from(JSON.stringify({ id: v.id })),
        }),
      },
      { paymentLink: link.id },
    );
    return { paymentId: view.id, created: true };
  } catch (err) {
    if (!(err instanceof IdempotencyKeyHeld)) throw err;
    // the same form posted twice at once: the first one's payment
    const first = await attemptPayment(deps.db, link, attempt, deps.config, deps.clock.now());
    if (first === null || first === 'pending') throw err;
    return { paymentId: first, created: false };
  }
}

/** A payment made through a link, as its page shows it (by id, only through that link). */
export async function linkPayment(db: Executor, link: PageLink, paymentId: string): Promise<PaymentRow | undefined> {
  return db<PaymentRow>('payments').where({ id: paymentId, payment_link: link.id }).first();
}
