/**
 * Ledger rules (pure). Glossary:
 * - account: one balance of one owner (a merchant, or the platform) in one environment and
 *   currency. A merchant has `available` (what it may refund or pay out) and `in_transit`
 *   (refunds and payouts taken from available, not yet confirmed by the provider: the balance
 *   object's `pending`); neither may go negative.
 * - posting: one ledger transaction of entries (signed amounts in minor units) summing to zero.
 * The platform's `provider_clearing` account mirrors money held at (or sent through) the
 * mobile-money providers and may be negative; `fees` collects the service's fees. Platform
 * balances are the sum of their entries (never cached: see allowsNegative).
 *
 * Money leaving to a client moves in two steps, so that a failure gives back exactly what was
 * taken: debit (available -> in_transit) at creation, then either deliver (in_transit -> provider,
 * fee to the platform) when the provider confirms, or return (in_transit -> available) when it
 * refuses.
 */

import type { Currency, Environment } from '../vocabulary';
export type { Currency, Environment };
export type AccountKind = 'available' | 'in_transit' | 'fees' | 'provider_clearing' | 'provider_fees';
export const PLATFORM = 'platform';
/** The owner of a connector's own accounts: `provider:pawapay` (docs/reconciliation.md#ledger). */
export const providerOwner = (connector: string) => `provider:${connector}`;

export interface AccountRef {
  owner: string;
  kind: AccountKind;
}

export interface Posting {
  kind: string;
  referenceId: string;
  environment: Environment;
  currency: Currency;
  merchantId: string | null;
  entries: { account: AccountRef; amount: number }[];
}

export const merchantAvailable = (merchantId: string): AccountRef => ({ owner: merchantId, kind: 'available' });
export const merchantInTransit = (merchantId: string): AccountRef => ({ owner: merchantId, kind: 'in_transit' });
export const platformFees: AccountRef = { owner: PLATFORM, kind: 'fees' };
export const providerClearing: AccountRef = { owner: PLATFORM, kind: 'provider_clearing' };
/**
 * The money held at one connector (its wallet), per currency: moved by every completed
 * collection, payout and refund through it and by its fees, compared daily with the wallet
 * balance the provider reports (docs/reconciliation.md#ledger). Negative while the provider holds
 * money for us, as `provider_clearing` is. An operation with no provider (none completes without
 * one) keeps the platform's.
 */
export const connectorClearing = (connector: string | null | undefined): AccountRef =>
  connector ? { owner: providerOwner(connector), kind: 'provider_clearing' } : providerClearing;
/** What a connector charges us: its fees, per currency (negative: an expense beside `fees`, what we earn). */
export const connectorFees = (connector: string): AccountRef => ({
  owner: providerOwner(connector),
  kind: 'provider_fees',
});
/**
 * The platform's accounts are not guarded: no lock, no cached balance, no floor. Every posting
 * of every merchant touches them, and nothing is decided on their balance (the sum of their
 * entries). Merchant accounts are guarded: cached, never negative, locked by the postings that
 * take from them (credits are written unfolded, without a lock: ledger/postings.ts).
 */
export const allowsNegative = (a: AccountRef) => a.owner === PLATFORM || a.owner.startsWith('provider:');

export class UnbalancedPosting extends Error {}

/** Throws unless every amount is a non-zero safe integer and the entries sum to zero. */
export function assertBalanced(p: Posting): void {
  if (p.entries.length < 2) throw new UnbalancedPosting(`${p.kind}: a posting needs at least two entries`);
  let sum = 0;
  for (const e of p.entries) {
    if (!Number.isSafeInteger(e.amount) || e.amount === 0)
      throw new UnbalancedPosting(`${p.kind}: bad amount ${e.amount}`);
    sum += e.amount;
  }
  if (sum !== 0) throw new UnbalancedPosting(`${p.kind}: entries sum to ${sum}, not 0`);
}

/** Drops zero entries (a fee of 0) and merges entries on the same account. */
export function normalise(p: Posting): Posting {
  const byAccount = new Map<string, { account: AccountRef; amount: number }>();
  for (const e of p.entries) {
    const key = `${e.account.owner}/${e.account.kind}`;
    const prev = byAccount.get(key);
    byAccount.set(key, { account: e.account, amount: (prev?.amount ?? 0) + e.amount });
  }
  return { ...p, entries: [...byAccount.values()].filter((e) => e.amount !== 0) };
}

/** A merchant's posting of `kind` about one object, normalised. */
function merchantPosting(
  kind: string,
  a: { referenceId: string; merchantId: string; environment: Environment; currency: Currency },
  entries: Posting['entries'],
): Posting {
  return normalise({
    kind,
    referenceId: a.referenceId,
    environment: a.environment,
    currency: a.currency,
    merchantId: a.merchantId,
    entries,
  });
}

/** A succeeded payment: the provider holds amount_charged; the merchant gets net, the platform the fee. */
export function paymentCredit(a: {
  paymentId: string;
  merchantId: string;
  environment: Environment;
  currency: Currency;
  amountCharged: number;
  amountNet: number;
  fee: number;
  /** the connector that collected it: its clearing account holds the money */
  provider?: string | null;
}): Posting {
  return merchantPosting('payment_credit', { ...a, referenceId: a.paymentId }, [
    { account: connectorClearing(a.provider), amount: -a.amountCharged },
    { account: merchantAvailable(a.merchantId), amount: a.amountNet },
    { account: platformFees, amount: a.fee },
  ]);
}

/** What leaves a merchant's balance for a client: a refund, or a payout with its fee. */
export type OutgoingKind = 'refund' | 'payout';
export interface Outgoing {
  referenceId: string;
  merchantId: string;
  environment: Environment;
  currency: Currency;
  amount: number;
  fee?: number;
  /** the connector that sent it: its clearing account pays it */
  provider?: string | null;
}

/** Posting kinds of the three steps of an outgoing movement (one posting per step and object). */
export const outgoingKinds = (kind: OutgoingKind) => ({
  debit: `${kind}_debit`,
  deliver: `${kind}_deliver`,
  return: `${kind}_return`,
});

/** At creation: amount + fee leave available and wait in transit. */
export function outgoingDebit(kind: OutgoingKind, a: Outgoing): Posting {
  const total = a.amount + (a.fee ?? 0);
  return merchantPosting(outgoingKinds(kind).debit, a, [
    { account: merchantAvailable(a.merchantId), amount: -total },
    { account: merchantInTransit(a.merchantId), amount: total },
  ]);
}

/** The provider confirmed: the amount goes out through the provider, the fee to the platform. */
export function outgoingDeliver(kind: OutgoingKind, a: Outgoing): Posting {
  const fee = a.fee ?? 0;
  return merchantPosting(outgoingKinds(kind).deliver, a, [
    { account: merchantInTransit(a.merchantId), amount: -(a.amount + fee) },
    { account: connectorClearing(a.provider), amount: a.amount },
    { account: platformFees, amount: fee },
  ]);
}

/** The exact reverse of a posting: a failed refund or payout gives back what its debit took. */
export function reversal(p: Posting, kind: string): Posting {
  return { ...p, kind, entries: p.entries.map((e) => ({ account: e.account, amount: -e.amount })) };
}

/**
 * A fee a provider's statement shows it took from its wallet, posted once per statement line
 * (docs/reconciliation.md#ledger): the wallet holds less (clearing up), the connector's fees
 * account shows the cost.
 */
export function providerFee(a: {
  connector: string;
  lineKey: string;
  environment: Environment;
  currency: Currency;
  fee: number;
}): Posting {
  return normalise({
    kind: 'provider_fee',
    referenceId: `${a.connector}:${a.lineKey}`,
    environment: a.environment,
    currency: a.currency,
    merchantId: null,
    entries: [
      { account: connectorFees(a.connector), amount: -a.fee },
      { account: connectorClearing(a.connector), amount: a.fee },
    ],
  });
}
