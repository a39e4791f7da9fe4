import type { SettlementRow } from '../db/rows';

/** The settlement object of docs/decisions.md#balance-and-settlement (also the `data.object` of settlement.completed). */
export function settlementView(s: SettlementRow) {
  return {
    id: s.id,
    object: 'settlement' as const,
    currency: s.currency,
    environment: s.environment,
    period_start: s.period_start,
    period_end: s.period_end,
    gross: s.gross,
    fees: s.fees,
    refunds: s.refunds,
    payouts: s.payouts,
    net: s.net,
    count: s.count,
    created: s.created,
  };
}

export type SettlementView = ReturnType<typeof settlementView>;
