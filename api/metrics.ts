import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ServiceContext } from '../shared/context';
import { attentionList, countPastBound, type AttentionReason } from '../shared/operations/attention';
import type { OperationKind } from '../shared/operations/kind';
import { checkLedger } from '../shared/ledger/check';
import { readBacklog } from '../shared/queues/backlog';
import { operatorLabel } from '../shared/metrics/providerCalls';
import { collectProcessMetrics } from '../shared/metrics/registry';
import { BOARD_PATH } from './board';
import { KINDS } from '../shared/kindRegistry';
import { partitionStates } from '../shared/db/partitions';
import { readReconciliationMetrics } from '../shared/reconciliation/metrics';

/** Methods kept as label values; anything else (Node accepts a few dozen) is counted as OTHER. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * The route label: the template of the route a request reached or would reach, or `unmatched`.
 * Never the raw path: every label value is a series kept for the life of the process.
 */
export function routeLabel(ctx: Context, routers: Router[]): string {
  const matched = (ctx as unknown as { _matchedRoute?: unknown })._matchedRoute;
  if (typeof matched === 'string') return matched;
  const path = ctx.path;
  if (path === '/metrics') return '/metrics';
  if (path === BOARD_PATH || path.startsWith(`${BOARD_PATH}/`)) return `${BOARD_PATH}/*`;
  for (const router of routers) {
    const layers = router.match(path, ctx.method).path.filter((l) => l.methods.length > 0);
    if (layers.length) return String(layers[layers.length - 1].path);
  }
  return 'unmatched';
}

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * GET /metrics (admin token): requests by route pattern, queue depths read at scrape time, what
 * Postgres says (storeMetrics) and the process's metrics. The pools serve their own.
 */
export function createMetrics(services: ServiceContext) {
  const registry = new Registry();
  if (services.config.nodeName) registry.setDefaultLabels({ node: services.config.nodeName });
  collectProcessMetrics(registry);
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer an HTTP request',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  /** A gauge `read` sets afresh at each scrape. */
  const scraped = (name: string, help: string, labelNames: string[], read: (gauge: Gauge) => Promise<void>) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        await read(this);
      },
    });
  scraped('queue_jobs', 'Jobs per queue and state', ['queue', 'state'], async (gauge) => {
    for (const q of services.queues.all()) {
      const counts = await q.getJobCounts('waiting', 'active', 'delayed', 'failed').catch(() => undefined);
      for (const [state, n] of Object.entries(counts ?? {})) gauge.set({ queue: q.name, state }, n);
    }
  });
  const pastBoundHelp =
    'Payments, refunds and payouts still open an hour after their provider window (GET /admin/attention)';
  scraped('operations_open_past_bound', pastBoundHelp, ['kind'], async (gauge) => {
    const counts = await countPastBound(services.db, KINDS, services.clock.now()).catch(() => undefined);
    for (const [kind, n] of Object.entries(counts ?? {})) gauge.set({ kind }, n);
  });
  scraped(
    'queue_oldest_waiting_seconds',
    'Age of the oldest job waiting for a worker, per queue (0: none waiting)',
    ['queue'],
    async (gauge) => {
      if (!services.queues.isReady()) return;
      const backlog = await readBacklog(services.queues).catch(() => []);
      for (const q of backlog) gauge.set({ queue: q.queue }, (q.oldestWaitMs ?? 0) / 1000);
    },
  );

  storeMetrics(registry, services);

  const shed = new Counter({
    name: 'http_requests_shed_total',
    help: 'Requests answered 503 service-unavailable because the work behind the API fell behind (OVERLOAD_*)',
    labelNames: ['route', 'reason'] as const,
    registers: [registry],
  });

  const record =
    (routers: Router[]): Middleware =>
    async (ctx, next) => {
      const end = duration.startTimer();
      try {
        await next();
      } finally {
        const method = METHODS.has(ctx.method) ? ctx.method : 'OTHER';
        const labels = { method, route: routeLabel(ctx, routers), status: String(ctx.status) };
        requests.inc(labels);
        end(labels);
      }
    };
  const serve: Middleware = async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  };
  return { record, serve, registry, shed };
}

/** Rows a scrape reads at most per kind from its status history; the rest wait for the next scrape. */
const TAIL_LIMIT = 10_000;
/** How often the ledger check runs at most (it reads every entry: not at every scrape). */
const LEDGER_CHECK_EVERY_MS = 10 * 60 * 1000;
const ATTENTION_REASONS: AttentionReason[] = ['open-past-bound', 'late-success', 'never-sent', 'amount-mismatch'];

/**
 * What Postgres says, read at scrape time (a restart loses nothing but the counters' start).
 * The two counters count rows closed since this process's first scrape; every web process
 * counts the same rows (take the max across instances, never the sum). The ledger check runs
 * in the background at most every LEDGER_CHECK_EVERY_MS. One read per scrape, on one connection.
 */
function storeMetrics(registry: Registry, services: ServiceContext): void {
  const { db } = services;
  const kinds: OperationKind<any, any, any>[] = Object.values(KINDS);
  const collect = () => read();
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Gauge({ name, help, labelNames, registers: [registry], collect });
  const timeToFinal = new Histogram({
    name: 'operation_time_to_final_seconds',
    help: 'Time from creation to final status of payments, card payments, refunds and payouts finalized since this web process started (max across web instances)',
    labelNames: ['kind', 'operator', 'status'] as const,
    buckets: [1, 2, 5, 10, 20, 30, 60, 120, 300, 900, 1800, 3600, 4 * 3600],
    registers: [registry],
    collect,
  });
  const oldestOpen = gauge(
    'operation_oldest_open_age_seconds',
    'Age of the oldest operation still open (not final), per kind; 0 when none is open',
    ['kind'],
  );
  const pastWindow = gauge(
    'operation_oldest_open_past_window_seconds',
    'How long past its provider window the open operation whose window ended first is, per kind; 0 when none is past',
    ['kind'],
  );
  const attention = gauge('attention_items', 'Items of GET /admin/attention by reason (at most 500 in all)', [
    'reason',
  ]);
  const pending = gauge('webhook_deliveries_pending', 'Webhook deliveries not yet succeeded or dead');
  const breakers = gauge('webhook_endpoints_breaker_open', 'Enabled webhook endpoints whose circuit breaker is open');
  const finished = new Counter({
    name: 'webhook_deliveries_finished_total',
    help: 'Webhook deliveries that reached an outcome (succeeded, dead) since this web process started (max across web instances)',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect,
  });
  const ledgerProblems = gauge(
    'ledger_check_problems',
    'Problems the last ledger check found (0: balances match their entries, every transaction sums to zero)',
  );
  const partitionsAhead = gauge(
    'history_partitions_months_ahead',
    'Whole months past the current one that a history table’s partitions cover (outbox-relay keeps 12: shared/db/partitions.ts)',
    ['table'],
  );
  const partitionDefaultRows = gauge(
    'history_partition_default_rows',
    'Rows in a history table’s DEFAULT partition (counted up to 1,000): rows no monthly or yearly partition took, 0 normally',
    ['table'],
  );
  const reconciliationItems = gauge(
    'reconciliation_items',
    'Reconciliation items of the last 30 days not resolved, per connector and category (matched: agreed, nothing to do)',
    ['connector', 'category'],
  );
  const reconciliationOldest = gauge(
    'reconciliation_oldest_unresolved_seconds',
    'How long the oldest reconciliation mismatch not resolved has waited since its run found it, per connector; 0 when none',
    ['connector'],
  );
  const walletDifference = gauge(
    'provider_wallet_difference',
    "The provider wallet's reported balance minus the ledger's expected one at the latest reading, minor units",
    ['connector', 'currency'],
  );
  new Gauge({
    name: 'reconciliation_balance_threshold',
    help: 'RECONCILIATION_BALANCE_THRESHOLD: a wallet difference past it (minor units) is flagged',
    registers: [registry],
  }).set(services.config.reconciliation.balanceThreshold);
  const ledgerLastRun = new Gauge({
    name: 'ledger_check_last_run_timestamp_seconds',
    help: 'When the last ledger check finished (Unix seconds; 0: not yet)',
    registers: [registry],
  });

  const historyMarks = new Map<string, number>();
  let deliveriesMark: string | undefined;
  let ledgerStartedAt = 0;
  let reading: Promise<void> | undefined;

  /** The closing history rows of a kind since its mark (none at the first call, which only sets it). */
  const finalizedSince = async (kind: OperationKind<any, any, any>) => {
    const open = kind.machine.open as string[];
    const history = kind.history.tableName;
    const [{ hi }] = await db(history).max('id as hi');
    const mark = historyMarks.get(kind.name);
    historyMarks.set(kind.name, Number(hi ?? 0));
    if (mark === undefined || hi === null) return;
    const scope = Object.fromEntries(Object.entries(kind.scope ?? {}).map(([k, v]) => [`o.${k}`, v]));
    const rows: { id: number; status: string; provider: string | null; operator: string | null; seconds: number }[] =
      await db(`${history} as h`)
        .join(`${kind.model.tableName} as o`, 'o.id', `h.${kind.history.column}`)
        .where(scope)
        .where('h.id', '>', mark)
        .where('h.id', '<=', hi)
        .whereNotIn('h.to_status', open)
        .where((q) => q.whereNull('h.from_status').orWhereIn('h.from_status', open))
        .orderBy('h.id')
        .limit(TAIL_LIMIT)
        .select(
          'h.id',
          'h.to_status as status',
          'o.provider',
          'o.operator',
          db.raw('greatest(0, extract(epoch from h.at - o.created_at))::float8 as seconds'),
        );
    if (rows.length === TAIL_LIMIT) historyMarks.set(kind.name, Number(rows[rows.length - 1].id));
    for (const r of rows) {
      const provider = r.provider ? services.providers.byProviderId(r.provider) : undefined;
      const operator = provider ? operatorLabel(provider, r.operator) : r.provider ? 'other' : 'none';
      timeToFinal.observe({ kind: kind.name, operator, status: r.status }, Number(r.seconds));
    }
  };

  const readDeliveries = async () => {
    const done = () => db('webhook_deliveries').whereNot('status', 'pending');
    if (deliveriesMark === undefined) {
      const [{ mark }] = await done().select(db.raw(`coalesce(max(completed_at), '-infinity')::text as mark`));
      deliveriesMark = mark;
      return;
    }
    // the mark stays Postgres's own text: a JS Date would drop the microseconds
    const rows: { status: string; n: number; mark: string }[] = await done()
      .where('completed_at', '>', db.raw('?::timestamptz', [deliveriesMark]))
      .groupBy('status')
      .select('status', db.raw('count(*)::int as n'), db.raw('(max(max(completed_at)) over ())::text as mark'));
    for (const r of rows) finished.inc({ outcome: r.status }, r.n);
    if (rows.length) deliveriesMark = rows[0].mark;
  };

  const runLedgerCheck = () => {
    if (Date.now() - ledgerStartedAt < LEDGER_CHECK_EVERY_MS) return;
    ledgerStartedAt = Date.now();
    checkLedger(db).then(
      (problems) => {
        ledgerProblems.set(problems.length);
        ledgerLastRun.set(Date.now() / 1000);
      },
      (err: Error) => services.log.warn({ err: { message: err.message } }, 'ledger check for /metrics failed'),
    );
  };

  const readAll = async () => {
    runLedgerCheck();
    for (const kind of kinds) await finalizedSince(kind);
    // the service's clock, as the sweeps and the attention list read it
    const now = new Date(services.clock.now());
    for (const kind of kinds) {
      const [{ age, past }] = await db(kind.model.tableName)
        .where(kind.scope ?? {})
        .whereIn('status', kind.machine.open as string[])
        .select(
          db.raw('coalesce(extract(epoch from ?::timestamptz - min(created_at)), 0)::float8 as age', [now]),
          db.raw('coalesce(extract(epoch from ?::timestamptz - min(window_ends_at)), 0)::float8 as past', [now]),
        );
      oldestOpen.set({ kind: kind.name }, Math.max(0, Number(age)));
      pastWindow.set({ kind: kind.name }, Math.max(0, Number(past)));
    }
    const items = await attentionList(db, KINDS, now.getTime(), 500);
    for (const reason of ATTENTION_REASONS) attention.set({ reason }, items.filter((i) => i.reason === reason).length);
    const [{ n: pendingNow }] = await db('webhook_deliveries').where('status', 'pending').count({ n: '*' });
    pending.set(Number(pendingNow));
    const [{ n: open }] = await db('webhooks')
      .where('status', 'enabled')
      .where('breaker_open_until', '>', db.raw('now()'))
      .count({ n: '*' });
    breakers.set(Number(open));
    for (const p of await partitionStates(db, now.getTime())) {
      if (!p.partitioned) continue;
      partitionsAhead.set({ table: p.table }, p.monthsAhead);
      partitionDefaultRows.set({ table: p.table }, p.defaultRows);
    }
    const recon = await readReconciliationMetrics(db, now.getTime());
    for (const i of recon.items) reconciliationItems.set({ connector: i.connector, category: i.category }, i.n);
    for (const o of recon.oldestUnresolved) reconciliationOldest.set({ connector: o.connector }, o.seconds);
    walletDifference.reset();
    for (const w of recon.walletDifference)
      walletDifference.set({ connector: w.connector, currency: w.currency }, w.difference);
    await readDeliveries();
  };

  const read = (): Promise<void> =>
    (reading ??= readAll()
      .catch((err: Error) => services.log.warn({ err: { message: err.message } }, 'metrics from Postgres not read'))
      .finally(() => (reading = undefined)));
}
