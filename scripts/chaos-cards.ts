import { randomInt, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Check } from './chaos-report';
import { drillMerchant, type DrillMerchant } from './chaos-merchant';
import type { OperatorApi } from './lib/demo';
import { atGateway, CARDS, creditsOf, endChallenge, EXPIRY, payByCard } from './lib/cards';
import { sleep } from './lib/processes';
import type { MpgsSimulator, NotificationMode } from './simulators/mpgs/server';

/**
 * The card part of `npm run chaos -- --live-connectors` (scripts/chaos-live.ts): a LIVE merchant of
 * its own (its card payments, some never paid, do not hold up the mobile-money merchant's drain)
 * pays by card through the checkout, as a browser would without one (scripts/lib/cards.ts), while
 * the drill breaks things. Its own faults, beside the drill's:
 *   kill during PAY   every ~10 s a card whose PAY the gateway answers slowly (expiry 10/39); once
 *                     the gateway holds the PAY, the card-charge worker is killed (SIGKILL)
 *   5xx created       cards whose PAY the gateway makes, then answers 500 (expiry 09/39)
 *   notifications     sent normally, twice, late, or not at all, in turns of 15 s
 * Its checks (rows of the drill's table):
 *   cards: charged once  per order (our payment id) at most one successful PAY, and a payment
 *                        succeeded iff the gateway holds a successful PAY; every card paid is final,
 *                        with the outcome its test card gives
 *   cards: ledger        one payment_credit of the net per succeeded card payment, none for the
 *                        others; the merchant's balance credited = the sum of their nets
 *   cards: faults        the faults above happened; every notification stored was processed, none
 *                        refused for its amount
 */

type Scenario =
  | 'approved'
  | 'challenge approved'
  | 'challenge failed'
  | 'declined'
  | 'insufficient funds'
  | '5xx created'
  | 'killed during PAY';
const EXPECTED: Record<Scenario, { status: 'succeeded' | 'failed'; failure?: string }> = {
  approved: { status: 'succeeded' },
  'challenge approved': { status: 'succeeded' },
  'challenge failed': { status: 'failed', failure: 'authentication-failed' },
  declined: { status: 'failed', failure: 'card-declined' },
  'insufficient funds': { status: 'failed', failure: 'insufficient-funds' },
  '5xx created': { status: 'succeeded' },
  'killed during PAY': { status: 'succeeded' },
};
const MIX: Scenario[] = [
  ...Array<Scenario>(5).fill('approved'),
  'challenge approved',
  'challenge approved',
  'challenge failed',
  'declined',
  'insufficient funds',
  '5xx created',
  '5xx created',
];
const NOTIFICATION_TURNS: NotificationMode[] = ['normal', 'duplicate', 'missing', 'late'];

interface Sent {
  id: string;
  scenario: Scenario;
  /** the checkout accepted the session (202) */
  paid: boolean;
  notifications: NotificationMode;
}

export class CardDrill {
  merchant?: DrillMerchant;
  readonly sent: Sent[] = [];
  readonly refused = new Map<string, number>();
  requested = 0;
  killsDuringPay = 0;
  private inFlight = new Set<Promise<void>>();
  private mode: NotificationMode = 'normal';

  constructor(
    private readonly sim: MpgsSimulator,
    private readonly serviceUrl: string,
    private readonly db: Knex,
  ) {}

  async createMerchant(admin: OperatorApi): Promise<DrillMerchant> {
    this.merchant = await drillMerchant(admin, this.serviceUrl, `Chaos live cards ${new Date().toISOString()}`, 'live');
    return this.merchant;
  }

  private refuse(why: string) {
    this.refused.set(why, (this.refused.get(why) ?? 0) + 1);
  }

  /** One card payment of `scenario`, created and paid; `kill` stops the card-charge worker (false when none was running). */
  private async one(scenario: Scenario, kill: () => boolean): Promise<void> {
    this.requested++;
    const res = await this.merchant!.client.post('/v1/payments', {
      amount: randomInt(500, 50_000),
      currency: 'USD',
      method: 'card',
      reference: `chaos-card-${randomUUID()}`,
      description: 'Chaos live card',
      customer_email: 'client@shop.example',
      customer_name: 'Chaos Client',
      return_url: 'https://shop.example/return',
    });
    if (res.status !== 201) return this.refuse(`create ${res.status} ${res.body?.error?.code ?? ''}`.trim());
    const id: string = res.body.id;
    const number = scenario.startsWith('challenge') ? CARDS.challenge : CARDS.frictionless;
    const expiry = {
      approved: EXPIRY.approved,
      'challenge approved': EXPIRY.approved,
      'challenge failed': EXPIRY.approved,
      declined: EXPIRY.declined,
      'insufficient funds': EXPIRY.insufficientFunds,
      '5xx created': EXPIRY.created5xx,
      'killed during PAY': EXPIRY.slow,
    }[scenario];
    const s: Sent = { id, scenario, paid: false, notifications: this.mode };
    this.sent.push(s);
    // the page lets the client try again (a 503 while Postgres or Redis is away)
    for (let i = 0; i < 5 && !s.paid; i++) {
      const paid = await payByCard(this.serviceUrl, this.sim, id, { number, expiry }).catch(() => ({ status: 0 }));
      if (paid.status === 202) s.paid = true;
      else {
        // the service may have taken the session and the answer been lost (a web process killed): it says so
        const row = await this.db('payments')
          .where({ id })
          .first('status')
          .catch(() => undefined);
        if (row && row.status !== 'pending') s.paid = true;
        else await sleep(2000);
      }
    }
    if (!s.paid) return this.refuse('checkout pay not accepted');
    if (scenario === 'killed during PAY') {
      // the gateway holds the PAY (and answers it slowly): card-charge dies with the PAY in flight
      for (let i = 0; i < 400; i++) {
        if (atGateway(this.sim.transactions(), id).pays > 0) {
          if (kill()) this.killsDuringPay++;
          break;
        }
        await sleep(50);
      }
    }
    if (scenario.startsWith('challenge')) {
      for (let i = 0; i < 300; i++) {
        try {
          await endChallenge(this.sim, id, scenario === 'challenge approved');
          break;
        } catch {
          // not challenged yet (the charge job may have been killed or delayed), or the return refused: again
          await sleep(200);
        }
      }
    }
  }

  /** Card payments while `more()`: one every ~1.5 s, a kill-during-PAY card every ~10 s, notifications in turns. */
  async run(more: () => boolean, kill: () => boolean): Promise<void> {
    let turn = 0;
    let lastTurn = Date.now();
    let lastKill = Date.now();
    while (more()) {
      if (Date.now() - lastTurn > 15_000) {
        this.mode = NOTIFICATION_TURNS[++turn % NOTIFICATION_TURNS.length];
        this.sim.setFaults({ notifications: this.mode });
        lastTurn = Date.now();
      }
      let scenario = MIX[randomInt(MIX.length)];
      if (Date.now() - lastKill > 10_000) {
        scenario = 'killed during PAY';
        lastKill = Date.now();
      }
      const p: Promise<void> = this.one(scenario, kill)
        .catch((err: Error) => this.refuse(`error ${err.message.slice(0, 60)}`))
        .finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
      await sleep(randomInt(1000, 2000));
    }
    await Promise.all(this.inFlight);
    this.sim.setFaults({ notifications: 'normal' });
  }

  /** Waits up to `waitS` for every card payment the checkout accepted to be final. */
  async waitUntilFinal(waitS: number): Promise<void> {
    const ids = this.sent.filter((s) => s.paid).map((s) => s.id);
    const by = Date.now() + waitS * 1000;
    while (Date.now() < by) {
      const open = await this.db('payments')
        .whereIn('id', ids)
        .whereIn('status', ['pending', 'processing'])
        .count<{ n: string }[]>('* as n')
        .then((r) => Number(r[0].n))
        .catch(() => 1);
      if (open === 0) return;
      await sleep(2000);
    }
  }

  /** The objects table's row of the card payments, what is open or doubled, and the checks. */
  async assess(): Promise<{ row: string[]; lostOrDoubled: number; checks: Check[]; mismatches: string[] }> {
    const db = this.db;
    const rows: {
      id: string;
      status: string;
      amount_net: string;
      failure_code: string | null;
    }[] = this.merchant
      ? await db('payments')
          .where({ merchant_id: this.merchant.id })
          .select('id', 'status', 'amount_net', 'failure_code')
      : [];
    const byId = new Map(rows.map((r) => [r.id, r]));
    const txns = this.sim.transactions();
    const mismatches: string[] = [];
    const statuses = new Map<string, number>();
    const payCount = new Map<number, number>();
    let open = 0;
    let doubled = 0;
    let unexpected = 0;
    let neverPaid = 0;
    let retried = 0;
    for (const r of rows) {
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      const gw = atGateway(txns, r.id);
      payCount.set(gw.pays, (payCount.get(gw.pays) ?? 0) + 1);
      if (gw.repeats) retried++;
      const sent = this.sent.find((s) => s.id === r.id);
      if (gw.paid > 1) {
        doubled++;
        mismatches.push(`${r.id}: ${gw.paid} successful PAYs at the gateway`);
      }
      if (r.status === 'pending' && gw.pays === 0 && !sent?.paid) {
        neverPaid++;
        continue;
      }
      if (r.status === 'pending' || r.status === 'processing') {
        open++;
        mismatches.push(`${r.id} (${sent?.scenario}): still ${r.status}`);
        continue;
      }
      if ((r.status === 'succeeded') !== (gw.paid === 1))
        mismatches.push(`${r.id} (${sent?.scenario}): ${r.status} here, ${gw.paid} successful PAY at the gateway`);
      const want = sent && EXPECTED[sent.scenario];
      if (want && (want.status !== r.status || (want.failure && want.failure !== r.failure_code))) {
        unexpected++;
        mismatches.push(`${r.id} (${sent.scenario}): ${r.status} ${r.failure_code ?? ''}, expected ${want.status}`);
      }
    }
    // orders at the gateway that are not one of ours
    const strangers = [...new Set(txns.map((t) => t.orderId))].filter((o) => !byId.has(o));
    for (const o of strangers) mismatches.push(`gateway order ${o}: not one of our card payments`);

    const succeeded = rows.filter((r) => r.status === 'succeeded');
    const credits = await creditsOf(
      db,
      rows.map((r) => r.id),
    );
    let creditProblems = 0;
    for (const r of rows) {
      const c = credits.get(r.id);
      const ok = r.status === 'succeeded' ? c?.n === 1 && c.amount === Number(r.amount_net) : !c;
      if (!ok) {
        creditProblems++;
        mismatches.push(
          `${r.id}: ${r.status}, credited ${c?.amount ?? 0} in ${c?.n ?? 0} postings, net ${r.amount_net}`,
        );
      }
    }
    const netSum = succeeded.reduce((n, r) => n + Number(r.amount_net), 0);
    const creditedSum = [...credits.values()].reduce((n, c) => n + c.amount, 0);
    const balance = this.merchant
      ? await db('ledger_balances')
          .where({ owner: this.merchant.id, environment: 'live', kind: 'available', currency: 'USD' })
          .first('balance')
      : undefined;
    const balanceNow = Number(balance?.balance ?? 0);

    const callbacks: { outcome: string | null; n: string }[] = rows.length
      ? await db('provider_callbacks')
          .where({ provider: 'mpgs' })
          .whereIn(
            'object_id',
            rows.map((r) => r.id),
          )
          .groupBy('outcome')
          .select('outcome', db.raw('count(*)::text as n'))
      : [];
    const cb = new Map(callbacks.map((c) => [c.outcome ?? 'unprocessed', Number(c.n)]));
    const notes = this.sim.notifications();
    const byNotification = new Map<string, number>();
    for (const n of notes)
      if (n.attempt === 1) byNotification.set(n.notificationId, (byNotification.get(n.notificationId) ?? 0) + 1);
    const duplicated = [...byNotification.values()].filter((n) => n > 1).length;
    const lost = this.sent.filter((s) => s.paid && s.notifications === 'missing').length;
    const late = this.sent.filter((s) => s.paid && s.notifications === 'late').length;
    const byScenario = (sc: Scenario) => this.sent.filter((s) => s.scenario === sc && s.paid).length;

    const refused = [...this.refused.values()].reduce((a, b) => a + b, 0);
    const counted = (m: Map<string | number, number>) => [...m].map(([k, n]) => `${k} × ${n}`).join(', ');
    return {
      row: [
        'card payments',
        String(this.requested),
        String(refused),
        String(rows.length),
        String(rows.length - open - neverPaid),
        String(open),
        String(doubled),
        `${[...statuses].map(([k, n]) => `${k} ${n}`).join(', ')}${neverPaid ? ` (never paid by the client ${neverPaid})` : ''}`,
      ],
      lostOrDoubled: open + doubled,
      mismatches,
      checks: [
        {
          name: 'cards: charged once',
          ok: doubled === 0 && open === 0 && unexpected === 0 && strangers.length === 0 && mismatches.length === 0,
          detail: `${rows.length} card payments (${succeeded.length} succeeded), PAY transactions per order: ${counted(payCount)}; successful PAY more than once ${doubled}; succeeded iff a successful PAY: ${mismatches.filter((m) => m.includes('successful PAY')).length} disagree; outcome not the test card's ${unexpected}; open ${open}; orders whose PAY was sent again with the same ids ${retried}; gateway orders not ours ${strangers.length}`,
        },
        {
          name: 'cards: ledger',
          ok: creditProblems === 0 && creditedSum === netSum && balanceNow === netSum,
          detail: `${succeeded.length} payment_credit expected, problems ${creditProblems}; credited ${creditedSum} = net of succeeded ${netSum} USD minor; merchant available balance ${balanceNow}`,
        },
        {
          name: 'cards: faults',
          ok:
            this.killsDuringPay > 0 &&
            byScenario('5xx created') > 0 &&
            duplicated > 0 &&
            lost > 0 &&
            !cb.get('unprocessed') &&
            !cb.get('amount-mismatch'),
          detail: `card-charge killed during PAY ${this.killsDuringPay} (of ${byScenario('killed during PAY')} slow PAYs); 5xx after the PAY was made ${byScenario('5xx created')}; notifications sent ${notes.length}, duplicated ${duplicated}, paid while notifications were lost ${lost}, late ${late}; stored ${[...cb.values()].reduce((a, b) => a + b, 0)} (${counted(cb) || 'none'}); refused or not paid: ${counted(this.refused) || 'none'}`,
        },
      ],
    };
  }
}
