import type { Caller } from '../caller';
import type { Config } from '../config';
import { isUniqueViolation } from '../db/errors';
import type { Batches } from '../db/coalescer';
import type { Caches } from '../ttlCache';
import type { TransactDeps } from '../db/transact';
import { FeeError, splitFees } from '../rules/fees';
import { newId } from '../ids';
import { operatorAccepts } from '../msisdn';
import { refuseIfClosed } from '../availability/closures';
import { BadRequest, Conflict, Unauthenticated, Unprocessable, ValidationFailed } from '../errors';
import type { ProviderRegistry } from '../providers/registry';
import { cardConnectorFor, connectorFor } from '../providers/routing';
import { QUEUES } from '../queues/names';
import { outboxMessage, type OutboxMessage } from '../queues/outbox';
import type { CreatePaymentInput } from './schemas';
import { merchantTerms, type MerchantTerms } from './terms';
import { paymentView, type PaymentView } from './view';
import { IdempotencyKeyHeld, keyRow, type IdempotentWrite } from '../idempotency';
import type { PaymentRow } from '../db/rows';
import { newOperationFields } from '../operations/kind';
import { creationWrite, writeAlone } from '../operations/transition';
import { mobileMoneyPaymentKind } from './kind';
import { CARD_CHECKOUT_WINDOW_MS, cardPaymentKind } from '../cards/kind';

/**
 * The payment row a request asks for, or the 400/422 of docs/decisions.md#payments. Pure: the caller has
 * loaded the merchant's terms.
 */
export function buildPayment(
  input: CreatePaymentInput,
  terms: MerchantTerms,
  caller: Caller,
  config: Config,
  providers: Pick<ProviderRegistry, 'route' | 'cardRoute'>,
  now: number,
  through: Through = {},
): PaymentRow {
  const mobile = input.method === 'mobile_money';
  if (!mobile) checkCardRequest(input, caller);
  if (mobile && !operatorAccepts(caller.environment, input.operator!, input.phone!)) {
    throw new BadRequest('operator-mismatch', `phone does not belong to ${input.operator}`, 'phone');
  }
  const feeBearer = input.fee_bearer ?? terms.fee_bearer;
  let split;
  try {
    split = splitFees(input.amount, terms.fees[input.currency], feeBearer);
  } catch (err) {
    if (err instanceof FeeError) throw new ValidationFailed('amount', `amount: ${err.message}`);
    throw err;
  }
  const limit = input.currency === 'USD' ? terms.per_tx_limit_usd : terms.per_tx_limit_cdf;
  if (limit !== null && split.amountCharged > limit) {
    throw new Unprocessable(
      'amount-over-limit',
      `amount_charged ${split.amountCharged} is above this merchant's per-transaction limit of ${limit} ${input.currency}`,
      'amount',
    );
  }
  // the connector that will carry it, and that it can (422 before anything is written or sent)
  const provider = mobile
    ? connectorFor(providers, caller.environment, input.operator!, 'collection', input.currency, split.amountCharged).id
    : cardConnectorFor(providers, caller.environment, input.currency, split.amountCharged).id;
  const windowMs = mobile ? config.providerWindowMs[caller.environment] : CARD_CHECKOUT_WINDOW_MS;
  return {
    id: newId('payment'),
    merchant_id: caller.merchantId,
    environment: caller.environment,
    // mobile money goes straight to the provider; a card waits for the client on the checkout page
    status: mobile ? 'processing' : 'pending',
    method: input.method,
    currency: input.currency,
    amount: input.amount,
    amount_charged: split.amountCharged,
    amount_net: split.amountNet,
    fee: split.fee,
    fee_bearer: feeBearer,
    amount_refunded: 0,
    reference: input.reference,
    description: input.description ?? null,
    metadata: input.metadata ?? {},
    operator: input.operator ?? null,
    phone: input.phone ?? null,
    customer_email: input.customer_email ?? null,
    customer_name: input.customer_name ?? null,
    return_url: input.return_url ?? null,
    provider,
    created: Math.floor(now / 1000),
    ...newOperationFields(windowMs, now),
    card: null,
    checkout_token: null,
    challenge_url: null,
    checkout_error: null,
    payment_link: through.paymentLink ?? null,
  };
}

/** Where a payment comes from besides the API: the payment link it is made through (shared/links). */
export interface Through {
  paymentLink?: string;
}

/**
 * docs/decisions.md#cards-hosted-checkout: a card payment has no operator or phone (the schema already requires
 * customer_email, customer_name and an absolute http(s) return_url); live keys need an https
 * return_url (and a routed card connector: 422 method-unavailable, in buildPayment).
 */
function checkCardRequest(input: CreatePaymentInput, caller: Caller): void {
  for (const field of ['operator', 'phone'] as const) {
    if (input[field] !== undefined) throw new ValidationFailed(field, `${field} is not allowed for card payments`);
  }
  if (caller.environment === 'live' && !input.return_url!.startsWith('https://'))
    throw new ValidationFailed('return_url', 'return_url must be an https URL for live payments');
}

/**
 * POST /v1/payments. The idempotency key with its answer, the payment, its first status change and
 * (mobile money) its push's outbox row are written in one statement, batched with concurrent POSTs
 * (transition.ts `writeAlone`), each row only if its own key was taken: a key held by another
 * request writes nothing (IdempotencyKeyHeld). The push is enqueued after commit, else by the outbox-relay.
 */
export async function createPayment(
  deps: TransactDeps & {
    config: Config;
    batches: Batches;
    caches: Caches;
    providers: Pick<ProviderRegistry, 'route' | 'cardRoute'>;
  },
  caller: Caller,
  input: CreatePaymentInput,
  key: IdempotentWrite<PaymentView>,
  through: Through = {},
): Promise<PaymentView> {
  const { db } = deps;
  const terms = await merchantTerms(deps, deps.config.credentialCacheMs, caller.merchantId);
  if (!terms) throw new Unauthenticated('api-key-invalid');
  const row = buildPayment(input, terms, caller, deps.config, deps.providers, deps.clock.now(), through);
  if (row.operator) await refuseIfClosed(deps, row.operator, 'collection');
  const view = paymentView(row, deps.config.baseUrl);
  const push: OutboxMessage[] =
    row.method === 'mobile_money'
      ? [outboxMessage(QUEUES.providerPush, 'push', { paymentId: row.id, requestId: caller.requestId })]
      : [];
  const kind = row.method === 'mobile_money' ? mobileMoneyPaymentKind : cardPaymentKind;
  let created: boolean;
  try {
    created = await writeAlone(
      { db, batches: deps.batches, log: deps.log },
      kind,
      creationWrite(row, push, keyRow(key, key.encode(view))),
    );
  } catch (err) {
    if (isUniqueViolation(err, 'payments_reference_unique')) {
      throw new Conflict('reference-conflict', 'This reference is already used by another payment of this merchant', {
        param: 'reference',
      });
    }
    throw err;
  }
  if (!created) throw new IdempotencyKeyHeld();
  await deps.outbox.publish(push, deps.log);
  return view;
}
