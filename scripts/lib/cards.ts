import type { Knex } from 'knex';
import type { MpgsSimulator, MpgsSimTransaction } from '../simulators/mpgs/server';

/**
 * The client's side of a live card payment through the Mastercard Gateway simulator, without a
 * browser, for demo:live and the chaos drill (test/integration/mpgs-cards.test.ts does the same):
 * the checkout page opens a gateway session, the hosted fields store the card in it (the
 * simulator's putCard), the page posts only the session id; a challenge is ended as the payer
 * would and the gateway's form post comes back to /checkout/{id}/3ds-return. And what the
 * gateway and the ledger say of a card payment afterwards.
 */

/** The browser's details the page sends with the session id (AUTHENTICATE_PAYER's device.browserDetails). */
export const BROWSER = {
  acceptHeaders: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
  colorDepth: 24,
  javaEnabled: false,
  language: 'fr-CD',
  screenHeight: 900,
  screenWidth: 1440,
  timeZone: -60,
};

/** The gateway's test cards (shared/providers/mpgs/README.md): 3-D Secure by number, PAY's outcome by expiry. */
export const CARDS = {
  frictionless: '2223000000000007',
  challenge: '5123450000000008',
} as const;
export const EXPIRY = {
  approved: '01/39',
  declined: '05/39',
  insufficientFunds: '06/39',
  /** a 500 after the gateway created the PAY */
  created5xx: '09/39',
  /** PAY answered after the simulator's slowMs */
  slow: '10/39',
} as const;

/** A client address of its own per payment: POST /checkout/{id}/pay is limited per client IP (the service trusts one proxy). */
let clientIp = 0;
const nextIp = () => {
  clientIp = (clientIp + 1) % 65_000;
  return `10.${200 + (clientIp >> 16)}.${(clientIp >> 8) & 255}.${clientIp & 255}`;
};

/**
 * Pays a live card payment as the checkout page does: GET /checkout/{id} (the gateway session),
 * the card into the session, POST /checkout/{id}/pay with the session id and the browser's
 * details. Returns the status of the POST (202 when accepted).
 */
export async function payByCard(
  baseUrl: string,
  sim: MpgsSimulator,
  paymentId: string,
  card: { number: string; expiry: string },
): Promise<{ status: number; body: string }> {
  const ip = nextIp();
  const page = await fetch(`${baseUrl}/checkout/${paymentId}`, { headers: { 'X-Forwarded-For': ip } });
  const html = await page.text();
  const session = /data-session="([^"]+)"/.exec(html)?.[1];
  if (page.status !== 200 || !session)
    return { status: page.status, body: `GET /checkout/${paymentId}: ${page.status}, no gateway session` };
  const [expiryMonth, expiryYear] = card.expiry.split('/');
  sim.putCard(session, { number: card.number, expiryMonth, expiryYear, securityCode: '100' });
  const res = await fetch(`${baseUrl}/checkout/${paymentId}/pay`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Origin: new URL(baseUrl).origin, 'X-Forwarded-For': ip },
    body: JSON.stringify({ session, browser: BROWSER }),
  });
  return { status: res.status, body: await res.text() };
}

/** The payer ends the issuer's challenge (approve or not); the gateway's form post comes back to the service. */
export async function endChallenge(
  sim: MpgsSimulator,
  paymentId: string,
  approve: boolean,
  authTransactionId = 'auth-1',
): Promise<number> {
  const { url, fields } = sim.completeChallenge(paymentId, authTransactionId, approve);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  await res.text();
  return res.status;
}

/** What the gateway holds for one order (our payment id): its PAY transactions, successful ones, REFUNDs. */
export function atGateway(txns: MpgsSimTransaction[], orderId: string) {
  const mine = txns.filter((t) => t.orderId === orderId);
  const pays = mine.filter((t) => t.type === 'PAYMENT');
  return {
    pays: pays.length,
    paid: pays.filter((t) => t.result === 'SUCCESS').length,
    refunds: mine.filter((t) => t.type === 'REFUND' && t.result === 'SUCCESS'),
    /** PAY or REFUND requests beyond the first for one transaction id (retries, settled by a retrieve) */
    repeats: mine
      .filter((t) => t.type === 'PAYMENT' || t.type === 'REFUND')
      .reduce((n, t) => n + Math.max(0, t.requests - 1), 0),
  };
}

/**
 * What the ledger credited to the merchant's available balance for each payment (`payment_credit`
 * transactions, by reference): payment id → [credit transactions, amount credited].
 */
export async function creditsOf(db: Knex, paymentIds: string[]): Promise<Map<string, { n: number; amount: number }>> {
  const out = new Map<string, { n: number; amount: number }>();
  for (let i = 0; i < paymentIds.length; i += 1000) {
    const rows: { reference_id: string; n: string; amount: string }[] = await db('ledger_transactions as t')
      .join('ledger_entries as e', 'e.transaction_id', 't.id')
      .join('ledger_accounts as a', 'a.id', 'e.account_id')
      .join('payments as p', 'p.id', 't.reference_id')
      .where('t.kind', 'payment_credit')
      .whereIn('t.reference_id', paymentIds.slice(i, i + 1000))
      .whereRaw('a.owner = p.merchant_id')
      .andWhere('a.kind', 'available')
      .groupBy('t.reference_id')
      .select(
        't.reference_id',
        db.raw('count(distinct t.id)::text as n'),
        db.raw('coalesce(sum(e.amount), 0)::text as amount'),
      );
    for (const r of rows) out.set(r.reference_id, { n: Number(r.n), amount: Number(r.amount) });
  }
  return out;
}

/** Counts of an object's events by type. */
export async function eventCounts(db: Knex, objectId: string): Promise<Record<string, number>> {
  const rows: { type: string; n: string }[] = await db('events')
    .where({ object_id: objectId })
    .groupBy('type')
    .select('type', db.raw('count(*)::text as n'));
  return Object.fromEntries(rows.map((r) => [r.type, Number(r.n)]));
}
