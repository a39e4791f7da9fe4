import type { Executor } from '../db/knex';
import { runSql, sqlStatement } from '../db/sql/run';
import type { AccountKind, Currency, Environment } from '../rules/ledger';
import { exact, type Exact } from '../money';
import { CURRENCIES } from '../vocabulary';

// a prepared statement: the view sums the unfolded credits over every monthly partition of
// ledger_entries, and planning that at each call cost 28 ms at ten years of partitions against
// 4.4 ms prepared (docs/retention.md#partitions-built)
const MERCHANT_ACCOUNTS = sqlStatement(
  'merchant-balances',
  `select kind, currency, balance::text as balance from ledger_balances
    where owner = $1 and environment = $2 and kind in ('available', 'in_transit')`,
);

/**
 * A merchant's accounts with their `ledger_balances` (cached balance plus unfolded credits:
 * postings.ts), summed as numeric and read as text: exact at any size (shared/money.ts).
 */
async function merchantAccounts(db: Executor, merchantId: string, environment: Environment) {
  const rows = await runSql<{ kind: AccountKind; currency: Currency; balance: string }>(db, MERCHANT_ACCOUNTS, [
    merchantId,
    environment,
  ]);
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
 * The balance object of docs/decisions.md#balance-and-settlement, from one statement (one snapshot): `available` is what the
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
