import type { ServiceContext } from '../context';
import { HttpClient } from '../httpClient';
import { PawapayStatements, pawapayCsvParser } from '../providers/pawapay/statements';
import { airtelReportParser } from '../providers/airtel/report';
import { mpgsReportParser } from '../providers/mpgs/report';
import { loadStatement } from './load';
import { listenForStatements } from './statementWake';
import type { ReportParser } from '../providers/report';

/**
 * Where each connector's statement comes from (docs/reconciliation.md#statements): pawaPay's
 * statements API, or a report file an operator uploads, read by the connector's own parser. A
 * new provider's report is a new parser here, nothing else.
 */

export interface FetchedStatement {
  statementId: string;
  /** the provider's wallet balances now, per currency (minor units) */
  wallets?: { currency: string; reported: number }[];
}

export interface StatementSource {
  connector: string;
  /** the parsers of the report formats an operator may upload */
  parsers: ReportParser[];
  /** an API: fetches and loads the statement covering the day (and reads the wallet balances) */
  fetch?(ctx: ServiceContext, day: { day: string; start: number; end: number }): Promise<FetchedStatement>;
}

/** An hour either side of the day: an operation near midnight is found whichever side the provider put it. */
const MARGIN_MS = 3_600_000;
/** How long a statement may take to be built. */
const READY_TIMEOUT_MS = 10 * 60_000;

const pawapaySource: StatementSource = {
  connector: 'pawapay',
  parsers: [pawapayCsvParser],
  async fetch(ctx, { start, end }) {
    const settings = ctx.config.connectors.pawapay;
    if (!settings) throw new Error('pawaPay is not configured (PAWAPAY_URL, PAWAPAY_API_TOKEN)');
    const client = new HttpClient(2);
    // listening before the request: a callback that comes before the first look is not missed
    const wakeups = await listenForStatements(ctx, 'pawapay');
    try {
      const api = new PawapayStatements({
        baseUrl: settings.url,
        apiToken: settings.apiToken,
        client,
        timeoutMs: ctx.config.payments.providerTimeoutMs,
      });
      const wallets = (await api.walletBalances()).filter((w) => w.wallet.country === 'COD');
      const iso = (t: number) => new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
      let statementId = '';
      for (const w of wallets) {
        statementId = await api.request({
          wallet: w.wallet,
          startDate: iso(start - MARGIN_MS),
          endDate: iso(end + MARGIN_MS),
          compressed: true,
          callbackUrl: `${ctx.config.baseUrl}/callbacks/pawapay/statements`,
        });
        const id = statementId;
        const ready = await api.whenReady(id, READY_TIMEOUT_MS, ctx.config.reconciliation.statementPollMs, (ms) =>
          wakeups.wait(id, ms),
        );
        await loadStatement(
          ctx.db,
          {
            connector: 'pawapay',
            source: 'api',
            format: 'pawapay-csv',
            providerStatementId: statementId,
            periodStart: new Date(Date.parse(ready.startDate)),
            periodEnd: new Date(Date.parse(ready.endDate)),
            timeZone: ctx.config.reconciliation.timeZone,
            maxBytes: ctx.config.reconciliation.maxReportBytes,
          },
          await api.download(ready.downloadUrl!),
          pawapayCsvParser,
        );
      }
      return { statementId, wallets: wallets.map((w) => ({ currency: w.wallet.currency, reported: w.balance })) };
    } finally {
      client.close();
      await wakeups.close();
    }
  },
};

const airtelSource: StatementSource = { connector: 'airtel', parsers: [airtelReportParser] };

const mpgsSource: StatementSource = { connector: 'mpgs', parsers: [mpgsReportParser] };

const SOURCES: Record<string, StatementSource> = { pawapay: pawapaySource, airtel: airtelSource, mpgs: mpgsSource };

export function sourceOf(connector: string): StatementSource | undefined {
  return SOURCES[connector];
}

export const RECONCILED_CONNECTORS = Object.keys(SOURCES);

/** The parser of an uploaded report: the connector's, by format (its only one when none is named). */
export function parserOf(connector: string, format: string | undefined): ReportParser | undefined {
  const s = SOURCES[connector];
  if (!s) return undefined;
  return format ? s.parsers.find((p) => p.format === format) : s.parsers[0];
}
