import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestEnv, type TestEnv } from '../helpers/env';
import { buildPayment } from '../../shared/payments/create';
import { applyStoredCallback } from '../../shared/operations/callbacks';
import { applyCallbackInOneStatement } from '../../shared/operations/oneStatement';
import { recordAcceptance, recordSentAlone } from '../../shared/operations/send';
import { IllegalTransition } from '../../shared/operations/transition';
import { findOperation } from '../../shared/db/sql/operationReads';
import type { OperationKind } from '../../shared/operations/kind';
import type { OperationRow } from '../../shared/db/rows';
import { CARD_SANDBOX_ID } from '../../shared/providers/cardSandbox/connector';
import { KINDS } from '../../shared/kindRegistry';

/**
 * One decision per transition (shared/operations/decision.ts): the lock-free path and the locked
 * path of a callback (applyCallbackInOneStatement, applyStoredCallback) and of a send's
 * acceptance (recordSentAlone, recordAcceptance) are fed every case, each on its own copy of the
 * same row, and must agree. A case the lock-free path carries out gets the outcome and writes
 * (row, history, event, deliveries, ledger, inbox) the locked path gets; one it leaves to the
 * locked path is one the locked path refuses (or, for a send, does not merely take), and its copy
 * is left as it was.
 */

const REPORTS = ['succeeded', 'failed', 'cancelled'] as const;
/** who reports: the provider that handles the operation, another one, or the right one for another environment */
const REPORTERS = ['own', 'other-provider', 'other-environment'] as const;
const AMOUNTS = ['same', 'unsaid', 'other-amount', 'other-currency'] as const;
/** what the locked path may decide alone: a refusal, or a move no caller should ask for (it throws) */
const LOCKED_ONLY = ['provider-mismatch', 'never-sent', 'unconfirmed', 'amount-mismatch', 'illegal'];

type Collection = 'payment' | 'card_payment';

/** The cases the paths disagree on, one a line, and the first one's writes in full. */
function said(
  disagreements: { case: unknown; lockFree: string; locked: string; written?: unknown; unchanged?: boolean }[],
  of: number,
) {
  const lines = disagreements
    .slice(0, 30)
    .map((d) => `${JSON.stringify(d.case)}: lock-free ${d.lockFree}, locked ${d.locked}`);
  const first = disagreements[0]?.written
    ? `\nthe first one's writes: ${JSON.stringify(disagreements[0].written)}`
    : '';
  return `${disagreements.length} of ${of} cases disagree:\n${lines.join('\n')}${first}\n`;
}

interface Case {
  kind: Collection;
  status: string;
  sent: boolean;
  report: (typeof REPORTS)[number];
  reporter: (typeof REPORTERS)[number];
  amount: (typeof AMOUNTS)[number];
}

describe('one decision per transition: the lock-free and the locked paths agree on every case', () => {
  let env: TestEnv;
  let merchantId: string;
  const db = () => env.services.db;
  const PROVIDER: Record<Collection, string> = { payment: 'vodacom-sandbox', card_payment: CARD_SANDBOX_ID };

  before(async () => {
    env = await startTestEnv();
    const m = await env.merchant({ scope: 'full' });
    merchantId = m.merchant.id;
    // an endpoint, so that an event's deliveries and their jobs are part of what is compared
    const hook = await env.admin('POST', '/admin/webhooks', {
      merchant_id: merchantId,
      url: 'http://127.0.0.1:9/hook',
      events: ['payment.*'],
      environment: 'test',
    });
    expect(hook.status).to.equal(201);
  });
  after(() => env?.close());

  /** A payment row of `kind` in `status`, written straight to the table as its flow would leave it. */
  async function aRow(kind: Collection, status: string, sent: boolean, environment = 'test'): Promise<string> {
    const now = env.clock.now();
    const row = buildPayment(
      {
        amount: 2_000,
        currency: 'USD',
        method: 'mobile_money',
        operator: 'vodacom',
        phone: '243990000001',
        reference: `case-${randomUUID()}`,
      },
      {
        fee_bearer: 'merchant',
        fees: { USD: { percent_bps: 0, fixed: 0 }, CDF: { percent_bps: 0, fixed: 0 } },
        per_tx_limit_usd: null,
        per_tx_limit_cdf: null,
      },
      { merchantId, environment: 'test' },
      env.config,
      env.services.providers,
      now,
    );
    const final = !['pending', 'processing'].includes(status);
    await db()('payments').insert({
      ...row,
      ...(kind === 'card_payment'
        ? {
            method: 'card',
            operator: null,
            phone: null,
            provider: PROVIDER.card_payment,
            customer_email: 'client@example.com',
            customer_name: 'Client',
            return_url: 'https://shop.example/return',
          }
        : {}),
      environment,
      status,
      sent_at: sent ? new Date(now) : null,
      completed: final ? row.created : null,
      failure_code: status === 'failed' ? 'provider-failed' : null,
      failure_message: status === 'failed' ? 'The provider reported a failure' : null,
      amount_refunded: status === 'refunded' ? row.amount_charged : 0,
      metadata: JSON.stringify(row.metadata),
    });
    return row.id;
  }

  /** A signed callback of `c` about `id`, stored in the inbox as the callback route stores one. */
  async function aCallback(c: Case, id: string, n: number): Promise<string> {
    const other: Record<Collection, string> = { payment: PROVIDER.card_payment, card_payment: PROVIDER.payment };
    const callbackId = randomUUID();
    await db()('provider_callbacks').insert({
      id: callbackId,
      provider: c.reporter === 'other-provider' ? other[c.kind] : PROVIDER[c.kind],
      raw_body: '{}',
      verified: true,
      object_kind: c.kind,
      object_id: id,
      reported_status: c.report,
      provider_ref: `REF-${n}`,
      failure_code: c.report === 'failed' ? 'payer-declined' : null,
      failure_message: c.report === 'failed' ? 'The payer declined' : null,
      amount: c.amount === 'unsaid' ? null : c.amount === 'other-amount' ? 2_001 : 2_000,
      currency: c.amount === 'unsaid' ? null : c.amount === 'other-currency' ? 'CDF' : 'USD',
    });
    return callbackId;
  }

  /** Everything a transition writes about a payment, without the ids and times that differ by nature. */
  async function written(id: string) {
    const p = await db()('payments').where({ id }).first();
    const history = await db()('payment_status_changes')
      .where({ payment_id: id })
      .orderBy('id')
      .select('from_status', 'to_status', 'reason');
    const events = await db()('events').where({ object_id: id }).orderBy('object_version');
    const deliveries = await db()('webhook_deliveries').whereIn(
      'event_id',
      events.map((e) => e.id),
    );
    const jobs = await db()('outbox').whereRaw(`payload->>'deliveryId' = any(?)`, [deliveries.map((d) => d.id)]);
    const entries = await db()('ledger_entries as e')
      .join('ledger_transactions as t', 't.id', 'e.transaction_id')
      .join('ledger_accounts as a', 'a.id', 'e.account_id')
      .where('t.reference_id', id)
      .orderBy(['a.kind', 'a.owner'])
      .select('t.kind as posting', 'a.kind', 'a.owner', 'e.amount');
    const inbox = await db()('provider_callbacks').where({ object_id: id }).select('outcome', 'processed_at');
    return {
      row: {
        status: p.status,
        version: p.version,
        provider_ref: p.provider_ref,
        failure_code: p.failure_code,
        failure_message: p.failure_message,
        completed: p.completed !== null,
        sent: p.sent_at !== null,
        amount_refunded: p.amount_refunded,
      },
      history,
      events: events.map((e) => ({ type: e.type, version: e.object_version, status: e.body.data.object.status })),
      deliveries: deliveries.length,
      jobs: jobs.map((j) => `${j.queue}/${j.job_name}`),
      ledger: entries.map((e) => ({ ...e, owner: e.owner === merchantId ? 'merchant' : e.owner })),
      inbox: inbox.map((r) => ({ outcome: r.outcome, processed: r.processed_at !== null })),
    };
  }

  const statusesOf = (kind: Collection) => KINDS[kind].machine.statuses as readonly string[];
  const isOpen = (kind: Collection, s: string) => (KINDS[kind].machine.open as readonly string[]).includes(s);

  it('callbacks: every (kind, status, sent, report, reporter, amount), one outcome and the same writes', async function () {
    this.timeout(180_000);
    const cases: Case[] = [];
    for (const kind of ['payment', 'card_payment'] as const)
      for (const status of statusesOf(kind))
        // an open operation's callback may overtake the recording of its acceptance
        for (const sent of isOpen(kind, status) ? [true, false] : [true])
          for (const report of REPORTS)
            for (const reporter of REPORTERS)
              for (const amount of AMOUNTS) cases.push({ kind, status, sent, report, reporter, amount });

    // two copies of each case: `locked` for the locked path, `free` for the lock-free one
    const copies = [];
    for (const [n, c] of cases.entries()) {
      const environment = c.reporter === 'other-environment' ? 'live' : 'test';
      const locked = await aRow(c.kind, c.status, c.sent, environment);
      const free = await aRow(c.kind, c.status, c.sent, environment);
      copies.push({
        c,
        locked: { id: locked, callback: await aCallback(c, locked, n) },
        free: { id: free, callback: await aCallback(c, free, n), before: await written(free) },
      });
    }

    // the locked path first: a first credit creates the merchant's accounts, which the lock-free path needs
    const lockedOutcomes: string[] = [];
    for (const { locked } of copies) {
      const outcome = await applyStoredCallback(env.services, KINDS, locked.callback).then(
        (r) => r.outcome,
        (err) => {
          if (err instanceof IllegalTransition) return 'illegal';
          throw err;
        },
      );
      lockedOutcomes.push(outcome);
    }

    const disagreements: Parameters<typeof said>[0] = [];
    const takenFree: Record<string, number> = {};
    for (const [i, { c, locked, free }] of copies.entries()) {
      const kind = KINDS[c.kind];
      const done = await applyCallbackInOneStatement(env.services, kind, free.callback, env.services.log);
      const lockedOutcome = lockedOutcomes[i];
      if (done) {
        takenFree[done.outcome] = (takenFree[done.outcome] ?? 0) + 1;
        const [a, b] = [await written(free.id), await written(locked.id)];
        if (done.outcome !== lockedOutcome || JSON.stringify(a) !== JSON.stringify(b))
          disagreements.push({
            case: c,
            lockFree: done.outcome,
            locked: lockedOutcome,
            written: { lockFree: a, locked: b },
          });
      } else {
        const unchanged = JSON.stringify(await written(free.id)) === JSON.stringify(free.before);
        if (!LOCKED_ONLY.includes(lockedOutcome) || !unchanged)
          disagreements.push({ case: c, lockFree: 'left to the locked path', locked: lockedOutcome, unchanged });
      }
    }
    expect(disagreements.length, said(disagreements, cases.length)).to.equal(0);
    // the comparison is not empty: the lock-free path carried out each kind of outcome it may
    expect(Object.keys(takenFree).sort()).to.deep.equal(['applied', 'duplicate', 'ignored-late']);
    // and the locked path refused on each ground the decision has
    expect([...new Set(lockedOutcomes)].sort()).to.include.members([
      'amount-mismatch',
      'never-sent',
      'provider-mismatch',
    ]);
  });

  it("sends: a provider's acceptance, for every (kind, status, sent), one outcome and the same row", async function () {
    this.timeout(60_000);
    const disagreements: Parameters<typeof said>[0] = [];
    let takenFree = 0;
    let fed = 0;
    for (const kind of ['payment', 'card_payment'] as const)
      for (const status of statusesOf(kind))
        for (const sent of [true, false]) {
          fed++;
          const k = KINDS[kind] as OperationKind<OperationRow, string, any>;
          const [lockedId, freeId] = [await aRow(kind, status, sent), await aRow(kind, status, sent)];
          const at = env.clock.now();
          const details = { reason: 'provider-accepted', providerRef: `REF-${kind}-${status}`, at };
          const locked = await recordAcceptance(
            env.services,
            k,
            lockedId,
            { trigger: 'sent' },
            details,
            env.services.log,
          ).catch((err) => {
            if (err instanceof IllegalTransition) return 'illegal';
            throw err;
          });
          const row = (await findOperation<OperationRow>(db(), k.sql, freeId))!;
          const before = await written(freeId);
          const free = await recordSentAlone(env.services, k, row, details.providerRef, at);
          const [a, b] = [await written(freeId), await written(lockedId)];
          if (free) {
            takenFree++;
            if (free !== locked || JSON.stringify(a) !== JSON.stringify(b))
              disagreements.push({
                case: { kind, status, sent },
                lockFree: free,
                locked,
                written: { lockFree: a, locked: b },
              });
          } else {
            // left to the locked path: the copy unchanged, and the locked path did more than take it (a move) or did not take it
            const stay = locked === 'applied' && b.row.status === status;
            if (stay || JSON.stringify(a) !== JSON.stringify(before))
              disagreements.push({ case: { kind, status, sent }, lockFree: 'left to the locked path', locked });
          }
        }
    expect(disagreements.length, said(disagreements, fed)).to.equal(0);
    expect(takenFree).to.be.greaterThan(0);
  });

  it('refunds and payouts: the lock-free callback path takes none (what they change needs the lock)', async () => {
    for (const kind of [KINDS.refund, KINDS.payout])
      expect(await applyCallbackInOneStatement(env.services, kind, randomUUID(), env.services.log)).to.equal(undefined);
  });
});
