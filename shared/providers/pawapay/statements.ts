import { Readable, PassThrough } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { HttpClient } from '../../httpClient';
import { decimalToMinor } from '../amounts';
import type { Currency } from '../../vocabulary';
import { CURRENCIES } from '../../vocabulary';
import { csvRows, headerKey } from '../reportCsv';
import {
  ReportError,
  type LineKind,
  type LineStatus,
  type ParsedReport,
  type ReportParser,
  type ReportSummary,
  type StatementLineIn,
} from '../report';
import { checkContract, describeErrors, type ContractName } from './contract';
import { KINDS, ourId } from './wire';

/**
 * pawaPay's statements API and wallet balances (README.md in this folder, "Statements"):
 * `POST /v2/statements` asks for a wallet's statement of a period (at most 31 days), pawaPay
 * builds it, says so by callback (and `GET /v2/statements/{id}`), and serves the CSV at a
 * `downloadUrl` valid for a day, GZIP when asked. The CSV is read as a stream, never whole.
 */

export interface PawapayStatementsOptions {
  baseUrl: string;
  apiToken: string;
  client: HttpClient;
  timeoutMs: number;
}

export interface PawapayWallet {
  country: string;
  currency: string;
  provider?: string;
}

export interface PawapayStatement {
  statementId: string;
  status: 'PROCESSING' | 'COMPLETED' | 'FAILED';
  wallet: PawapayWallet;
  startDate: string;
  endDate: string;
  downloadUrl?: string;
  compressed?: boolean;
  failureReason?: { failureCode: string; failureMessage?: string };
}

export class PawapayStatementError extends Error {}

export class PawapayStatements {
  constructor(private readonly opts: PawapayStatementsOptions) {}

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    const base = this.opts.baseUrl.replace(/\/+$/, '');
    const res = await this.opts.client.request(base + path, {
      method,
      headers: {
        Accept: 'application/json',
        Authorization: `Bearer ${this.opts.apiToken}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      timeoutMs: this.opts.timeoutMs,
    });
    if (res.status < 200 || res.status >= 300)
      throw new PawapayStatementError(`pawaPay ${method} ${path} answered HTTP ${res.status}`);
    try {
      return JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new PawapayStatementError(`pawaPay ${method} ${path} answered no JSON`);
    }
  }

  private checked<T>(name: ContractName, data: unknown, what: string): T {
    const c = checkContract(name, data);
    if (!c.ok) throw new PawapayStatementError(`pawaPay's ${what} is not as documented: ${describeErrors(c.errors)}`);
    return data as T;
  }

  /** Every wallet and its balance (minor units; a balance our currencies cannot hold is left out). */
  async walletBalances(): Promise<{ wallet: PawapayWallet; balance: number }[]> {
    const body = this.checked<{
      balances: { country: string; currency: string; balance: string; provider?: string }[];
    }>('walletBalances', await this.call('GET', '/v2/wallet-balances'), 'wallet balances answer');
    const out: { wallet: PawapayWallet; balance: number }[] = [];
    for (const b of body.balances) {
      if (!(CURRENCIES as readonly string[]).includes(b.currency)) continue;
      const negative = b.balance.startsWith('-');
      const minor = decimalToMinor(negative ? b.balance.slice(1) : b.balance, b.currency as Currency);
      if (minor === undefined)
        throw new PawapayStatementError(`pawaPay's balance ${b.balance} is not a ${b.currency} amount`);
      out.push({
        wallet: { country: b.country, currency: b.currency, ...(b.provider ? { provider: b.provider } : {}) },
        balance: negative ? -minor : minor,
      });
    }
    return out;
  }

  /** Asks for a statement; resolves with pawaPay's statementId once ACCEPTED. */
  async request(args: {
    wallet: PawapayWallet;
    startDate: string;
    endDate: string;
    compressed: boolean;
    callbackUrl?: string;
  }): Promise<string> {
    const body = {
      wallet: args.wallet,
      ...(args.callbackUrl ? { callbackUrl: args.callbackUrl } : {}),
      startDate: args.startDate,
      endDate: args.endDate,
      compressed: args.compressed,
    };
    this.checked('statementRequest', body, 'statement request (ours)');
    const answer = this.checked<{ status: string; statementId?: string; failureReason?: { failureCode: string } }>(
      'statementInitiation',
      await this.call('POST', '/v2/statements', body),
      'statement initiation answer',
    );
    if (answer.status !== 'ACCEPTED')
      throw new PawapayStatementError(
        `pawaPay rejected the statement: ${answer.failureReason?.failureCode ?? 'no reason'}`,
      );
    return answer.statementId!;
  }

  async status(statementId: string): Promise<PawapayStatement | null> {
    const answer = this.checked<{ status: string; data?: PawapayStatement }>(
      'statementStatus',
      await this.call('GET', `/v2/statements/${encodeURIComponent(statementId)}`),
      'statement status answer',
    );
    return answer.status === 'FOUND' ? answer.data! : null;
  }

  /** Polls until the statement is COMPLETED (or FAILED: an error); the callback only saves a wait. */
  async whenReady(
    statementId: string,
    timeoutMs: number,
    pollMs = 1000,
    /** waits until the next look: `pollMs`, or less when a statement callback wakes it (statementWake.ts) */
    wait: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ): Promise<PawapayStatement> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const s = await this.status(statementId);
      if (s?.status === 'COMPLETED') return s;
      if (s?.status === 'FAILED')
        throw new PawapayStatementError(`pawaPay failed the statement: ${s.failureReason?.failureCode ?? 'no reason'}`);
      if (Date.now() > end) throw new PawapayStatementError(`statement ${statementId} not ready in ${timeoutMs} ms`);
      await wait(Math.max(0, Math.min(pollMs, end - Date.now())));
    }
  }

  /**
   * The statement's CSV as a stream of bytes, un-gzipped when it is GZIP (by its first two bytes:
   * whatever the request asked, the file says what it is).
   */
  async download(downloadUrl: string): Promise<Readable> {
    const res = await fetch(downloadUrl, { signal: AbortSignal.timeout(10 * 60_000) });
    if (!res.ok || !res.body) throw new PawapayStatementError(`the statement download answered HTTP ${res.status}`);
    return gunzipIfGzip(Readable.fromWeb(res.body));
  }
}

/** Passes bytes through, or through gunzip when they start with GZIP's magic number. */
export function gunzipIfGzip(input: Readable): Readable {
  const out = new PassThrough();
  let decided = false;
  let target: NodeJS.WritableStream = out;
  const fail = (err: Error) => out.destroy(new ReportError(null, `the file could not be read: ${err.message}`));
  input.on('error', fail);
  input.on('data', (chunk: Buffer) => {
    if (!decided) {
      decided = true;
      if (chunk.length >= 2 && chunk[0] === 0x1f && chunk[1] === 0x8b) {
        const gunzip = createGunzip();
        gunzip.on('error', (err) => fail(err));
        gunzip.pipe(out);
        target = gunzip;
      }
    }
    if (!target.write(chunk)) {
      input.pause();
      target.once('drain', () => input.resume());
    }
  });
  input.on('end', () => {
    if (target === out) out.end();
    else target.end();
  });
  return out;
}

/**
 * The columns read (docs/reconciliation.md, "pawaPay statement"): by name, whatever their order,
 * without case or spaces. The dashboard's glossary (https://docs.pawapay.io/dashboard/finances/history,
 * https://docs.pawapay.io/dashboard/finances/statements) names Creation Date, MSISDN, Transaction ID,
 * Amount, Currency, Country, MNO and Type; the fee, the balance and the provider's id are read
 * under the names below (README.md: the columns the reference left unclear).
 */
const COLUMNS = {
  created: ['creationdate', 'created'],
  transactionId: ['transactionid'],
  amount: ['amount'],
  currency: ['currency'],
  type: ['type', 'transactiontype'],
  status: ['status'],
  fee: ['fee', 'feeamount', 'fees'],
  balance: ['balance', 'balanceafter', 'closingbalance'],
  providerRef: ['providertransactionid', 'financialtransactionid'],
} as const;
type Column = keyof typeof COLUMNS;
const REQUIRED: Column[] = ['created', 'transactionId', 'amount', 'currency', 'type'];

const TYPES: Record<string, { kind: LineKind; prefix: string | null }> = {
  DEPOSIT: { kind: 'collection', prefix: KINDS.payment.prefix },
  PAYOUT: { kind: 'payout', prefix: KINDS.payout.prefix },
  REFUND: { kind: 'refund', prefix: KINDS.refund.prefix },
  DEPOSIT_REVERSAL: { kind: 'reversal', prefix: KINDS.payment.prefix },
  REVERSAL: { kind: 'reversal', prefix: KINDS.payment.prefix },
  FEE: { kind: 'fee', prefix: null },
};

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

function amountOf(text: string, currency: Currency, lineNo: number, what: string): number {
  const t = text.trim().replace(/^\+/, '');
  const negative = t.startsWith('-');
  const minor = decimalToMinor(negative ? t.slice(1) : t, currency);
  if (minor === undefined) throw new ReportError(lineNo, `${what} "${text}" is not a ${currency} amount`);
  return negative ? -minor : minor;
}

function dateOf(text: string, lineNo: number): Date {
  const t = text.trim();
  // "2025-05-10 10:00:00" or ISO; UTC when no offset is written (the glossary: time is in UTC)
  const iso = /[zZ]|[+-]\d{2}:?\d{2}$/.test(t) ? t.replace(' ', 'T') : `${t.replace(' ', 'T')}Z`;
  const ms = Date.parse(iso);
  if (!/^\d{4}-\d{2}-\d{2}/.test(t) || Number.isNaN(ms))
    throw new ReportError(lineNo, `"${text}" is not a date and time`);
  return new Date(ms);
}

/** The pawaPay statement CSV as statement lines. */
export const pawapayCsvParser: ReportParser = {
  connector: 'pawapay',
  format: 'pawapay-csv',
  parse(input: Readable): ParsedReport {
    const summary: ReportSummary = { periodStart: null, periodEnd: null, currency: null, closingBalance: null };
    let latest = -Infinity;
    async function* lines(): AsyncGenerator<StatementLineIn> {
      let index: Partial<Record<Column, number>> | null = null;
      let header: string[] = [];
      for await (const { lineNo, fields } of csvRows(input)) {
        if (!index) {
          header = fields;
          const keys = fields.map(headerKey);
          index = {};
          for (const [col, names] of Object.entries(COLUMNS) as [Column, readonly string[]][]) {
            const i = keys.findIndex((k) => names.includes(k));
            if (i >= 0) index[col] = i;
          }
          const missing = REQUIRED.filter((c) => index![c] === undefined);
          if (missing.length) throw new ReportError(lineNo, `the header lacks the column(s) ${missing.join(', ')}`);
          continue;
        }
        if (fields.length !== header.length)
          throw new ReportError(lineNo, `${fields.length} fields where the header has ${header.length} (truncated?)`);
        const get = (c: Column) => (index![c] === undefined ? '' : fields[index![c]].trim());
        const raw = Object.fromEntries(header.map((h, i) => [h, fields[i]]));
        const currency = get('currency');
        if (!(CURRENCIES as readonly string[]).includes(currency))
          throw new ReportError(lineNo, `currency "${currency}" is not one of ${CURRENCIES.join(', ')}`);
        const type = get('type')
          .toUpperCase()
          .replace(/[\s-]+/g, '_');
        const t = TYPES[type] ?? { kind: 'other', prefix: null };
        const id = get('transactionId');
        const amount = amountOf(get('amount'), currency as Currency, lineNo, 'amount');
        const fee = get('fee') ? Math.abs(amountOf(get('fee'), currency as Currency, lineNo, 'fee')) : 0;
        const occurredAt = dateOf(get('created'), lineNo);
        const statusText = get('status').toUpperCase();
        const status: LineStatus =
          statusText === '' || statusText === 'COMPLETED'
            ? 'completed'
            : statusText === 'FAILED'
              ? 'failed'
              : 'pending';
        if (get('balance')) {
          const t = occurredAt.getTime();
          if (t >= latest) {
            latest = t;
            summary.closingBalance = amountOf(get('balance'), currency as Currency, lineNo, 'balance');
          }
        }
        summary.currency = currency;
        yield {
          lineNo,
          raw,
          ourId: t.prefix && UUID.test(id) ? ourId(id.toLowerCase(), { prefix: t.prefix } as never) : null,
          providerRef: get('providerRef') || (id && !UUID.test(id) ? id : null),
          kind: t.kind,
          status,
          amount: Math.abs(amount),
          currency,
          fee,
          occurredAt,
        };
      }
      if (!index) throw new ReportError(null, 'the file is empty');
    }
    return { lines: lines(), summary: () => summary };
  },
};
