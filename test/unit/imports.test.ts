import { expect } from 'chai';
import path from 'node:path';
import madge from 'madge';

/**
 * The layers of the code point one way (CONTRIBUTING.md#one-way-for-each-thing), type imports included: a module may
 * import its own layer or the layers below it, never one above, and nothing forms a circle.
 *
 *   5  api/, workers/, scripts/     the entry points and tools (scripts never import test/)
 *   4  feature modules              shared/payments, refunds, payouts, cards, webhooks, merchants, …
 *   3  the kernel                   shared/operations, and the process context (shared/context.ts)
 *   2  what the kernel writes to    shared/providers, shared/events, shared/ledger, and the parts of the
 *                                   writer's statement that live with a feature: shared/webhooks/fanout.ts,
 *                                   shared/idempotencySql.ts, shared/requestSignaturesSql.ts
 *   1  the stores                   shared/db, shared/queues
 *   0  the vocabulary               config, clock, errors, vocabulary, logger, metrics, tracing, money, text, ids, msisdn, caller,
 *                                  rules (pure: fees, ledger, refund, settlement), crypto…; the environment readers
 *                                  (shared/env.ts) with the connector table (shared/providers/table.ts) and each
 *                                  connector's settings loader (shared/providers/<name>/settings.ts), which the
 *                                  configuration composes
 *
 * The kind registry (shared/kindRegistry.ts) is a feature-level module the entry points hand to
 * the kernel. Tests (test/) may import any layer.
 */
const BASE =
  /^shared\/(config|env|clock|errors|vocabulary|logger|money|text|timeout|ttlCache|validation|httpClient|restart|heartbeat|ids|msisdn|caller)\.ts$|^shared\/(rules|crypto|metrics|tracing)\//;

/** The connector table and each connector's settings loader: read by the configuration, so layer 0 (they import no connector). */
const READ_BY_CONFIG = /^shared\/providers\/(table\.ts|[A-Za-z]+\/settings\.ts)$/;

/** A feature's part of the kernel's writer (shared/operations/writer.ts composes it): layer 2, so it imports no feature. */
const WRITTEN_WITH_THE_KERNEL = /^shared\/(idempotencySql|requestSignaturesSql)\.ts$|^shared\/webhooks\/fanout\.ts$/;

export function layerOf(file: string): number {
  if (/^(api|workers|scripts|test)\//.test(file)) return 5;
  if (READ_BY_CONFIG.test(file)) return 0;
  if (file.startsWith('shared/operations/') || file === 'shared/context.ts') return 3;
  if (/^shared\/(providers|events|ledger)\//.test(file) || WRITTEN_WITH_THE_KERNEL.test(file)) return 2;
  if (/^shared\/(db|queues)\//.test(file)) return 1;
  if (BASE.test(file)) return 0;
  return 4;
}

/** Every import that goes against the layers: up a layer, from scripts into test/, or from shared into an entry point. */
export function crossings(graph: Record<string, string[]>): string[] {
  const bad: string[] = [];
  for (const [from, tos] of Object.entries(graph)) {
    for (const to of tos) {
      const up = layerOf(to) > layerOf(from);
      const intoTests = !from.startsWith('test/') && to.startsWith('test/');
      if (up || intoTests) bad.push(`${from} → ${to}`);
    }
  }
  return bad;
}

describe('module graph', () => {
  const root = path.join(__dirname, '..', '..');
  let graph: Awaited<ReturnType<typeof madge>>;
  before(async function () {
    this.timeout(60_000);
    graph = await madge(
      ['api', 'shared', 'workers', 'scripts', 'test'].map((d) => path.join(root, d)),
      {
        baseDir: root,
        fileExtensions: ['ts'],
        tsConfig: path.join(root, 'tsconfig.json'),
        // `import type` counts: a type from a higher layer is a dependency on it all the same
        detectiveOptions: { ts: { skipTypeImports: false } },
      },
    );
  });

  it('has no import circle, type imports included', () => {
    expect(graph.circular().map((c) => c.join(' → '))).to.deep.equal([]);
  });

  it('has every import pointing down the layers (or within one), and no script importing test/', () => {
    expect(crossings(graph.obj())).to.deep.equal([]);
  });

  it('finds a crossing when there is one (the check can fail)', () => {
    expect(
      crossings({
        'shared/db/models.ts': ['shared/payments/view.ts'],
        'scripts/bench-e2e.ts': ['test/helpers/env.ts'],
        'shared/operations/send.ts': ['shared/kindRegistry.ts'],
        'shared/webhooks/fanout.ts': ['shared/webhooks/endpoints.ts', 'shared/operations/writer.ts'],
        'shared/idempotencySql.ts': ['shared/idempotency.ts'],
        'shared/db/sql/outbox.ts': ['shared/events/record.ts'],
      }),
    ).to.deep.equal([
      'shared/db/models.ts → shared/payments/view.ts',
      'scripts/bench-e2e.ts → test/helpers/env.ts',
      'shared/operations/send.ts → shared/kindRegistry.ts',
      'shared/webhooks/fanout.ts → shared/webhooks/endpoints.ts',
      'shared/webhooks/fanout.ts → shared/operations/writer.ts',
      'shared/idempotencySql.ts → shared/idempotency.ts',
      'shared/db/sql/outbox.ts → shared/events/record.ts',
    ]);
    expect(
      crossings({
        'shared/payments/view.ts': ['shared/db/rows.ts', 'shared/operations/kind.ts'],
        'test/unit/x.test.ts': ['api/app.ts'],
        // the writer composes the parts their owners write
        'shared/operations/writer.ts': [
          'shared/webhooks/fanout.ts',
          'shared/idempotencySql.ts',
          'shared/requestSignaturesSql.ts',
          'shared/ledger/credit.ts',
          'shared/providers/callbackOutcome.ts',
          'shared/events/record.ts',
        ],
      }),
    ).to.deep.equal([]);
  });
});
