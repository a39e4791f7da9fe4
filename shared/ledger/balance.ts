import { raw } from 'objection';
import { LedgerBalance } from '../db/models';
import type { Executor } from '../db/knex';
import type { AccountKind, Currency, Environment } from '../rules/ledger';
import { exact, type Exact } from '../money';
import { CURRENCIES } from '../vocabulary';

/**
 * A merchant's accounts with their `ledger_balances` (cached balance plus unfolded credits:
 * postings.ts), summed as numeric and read as text: exact at any size (shared/money.ts).
 */
async function merchantAccounts(db: Executor, merchantId: string, environment: Environment) {
  const rows: { kind: AccountKind; currency: Currency; balance: string }[] = await LedgerBalance.query(db)
    .where({ owner: merchantId, environment })
    .whereIn('kind', ['available', 'in_transit'])
    .select('kind', 'currency', raw('balance::text as balance'));
  return rows.map((r) => ({ kind: r.kind, currency: r.currency, balance: exact(r.balance) }));
}

/** A merchant's available balance per currency in one environment (0 where no account yet). */
export async function availableBalances(
  db: Executor,
  merchantId: string,
  environment: Environment,
): Promise<Record<Currency, Exact>> {
  const out: Record<Currency, Exact> = { USD: 0, CDF: 0 };
  for (const r of await merchantAccounts(db, merchantId, environment))
    if (r.kind === 'available') out[r.currency] = r.balance;
  return out;
}

/**
 * The balance object of docs/decisions.md, from one statement (one snapshot): `available` is what the
 * merchant may refund or pay out; `pending` is the `in_transit` account, what refunds and payouts
 * (with their fees) took from available until the provider confirms (it leaves) or refuses (it
 * returns). Every currency is listed, 0 where nothing moved; answer it with exactJson (exact amounts).
 */
export async function balanceOf(db: Executor, merchantId: string, environment: Environment) {
  const rows = await merchantAccounts(db, merchantId, environment);
  const amounts = (kind: 'available' | 'in_transit') =>
    CURRENCIES.map((currency) => ({
      currency,
      amount: rows.find((r) => r.kind === kind && r.currency === currency)?.balance ?? 0,
    }));
  return { object: 'balance' as const, environment, available: amounts('available'), pending: amounts('in_transit') };
}
