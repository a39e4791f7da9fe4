import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { gzipSync } from 'node:zlib';
import type { Currency } from '../../../shared/vocabulary';
import type { HttpClient } from '../../../shared/httpClient';
import { decimalToMinor, minorToDecimal } from '../../../shared/providers/amounts';
import { checkContract, describeErrors } from '../../../shared/providers/pawapay/contract';

/** What the finances read of a simulated transaction (simulator.ts's SimTransaction). */
interface SimTransaction {
  kind: 'deposit' | 'payout' | 'refund';
  id: string;
  phoneNumber: string;
  provider: string;
  amount: string;
  currency: Currency;
  status: string;
}

/**
 * The pawaPay simulator's finances (README.md in this folder, "Statements"): the wallet of each
 * currency moved by every COMPLETED transaction and its fee, `GET /v2/wallet-balances`,
 * `POST /v2/statements` and `GET /v2/statements/{id}` checked against the same JSON Schemas as
 * the connector, the statement callback, and the CSV (GZIP when asked) at a `downloadUrl` that
 * expires a day after it was made. Injections put on the statement what a real provider may:
 * a reversal, another fee, a transaction we never created, another amount.
 */

export interface StatementRow {
  created: Date;
  type: 'DEPOSIT' | 'PAYOUT' | 'REFUND' | 'DEPOSIT_REVERSAL';
  id: string;
  providerRef: string;
  msisdn: string;
  provider: string;
  /** signed: what the wallet gained */
  amount: number;
  fee: number;
  currency: Currency;
}

export interface SimStatementsOptions {
  /** the provider fee in basis points of each completed transaction; default 0 */
  feeBps?: number;
  /** how long a statement takes to build (ms); default 200 */
  buildMs?: number;
}

export interface SimFinances {
  /** a later reversal of a completed deposit (now) */
  reverse(depositId: string): void;
  /** this transaction's fee, not the contract's */
  setFee(id: string, fee: number): void;
  /** this transaction's amount on the statement and in the wallet, not the one asked */
  setAmount(id: string, amount: number): void;
  /** this transaction left off the statements and the wallet (a provider's record lost) */
  omit(id: string): void;
  /** a completed deposit nobody asked the provider for */
  foreignDeposit(amount: number, currency: Currency): string;
  /** every wallet row, oldest first */
  rows(): StatementRow[];
  /** what each statement callback was answered (HTTP status; 0: no answer) */
  statementCallbacks(): { statementId: string; status: number }[];
  balance(currency: Currency): number;
}

interface SimStatement {
  statementId: string;
  status: 'PROCESSING' | 'COMPLETED' | 'FAILED';
  wallet: { country: string; currency: string; provider?: string };
  created: string;
  startDate: string;
  endDate: string;
  compressed: boolean;
  callbackUrl?: string;
  downloadUrl?: string;
  expires?: number;
}

const HEADER = [
  'Creation Date',
  'MSISDN',
  'Transaction ID',
  'Provider Transaction ID',
  'Amount',
  'Fee',
  'Balance',
  'Currency',
  'Country',
  'MNO',
  'Type',
  'Status',
];

/** A CSV field as a provider writes it: quoted only when it must be. */
const field = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
const providerRefOf = (id: string) => `SIM${id.replace(/-/g, '').slice(0, 12).toUpperCase()}`;
const utc = (text: string) => Date.parse(/[zZ]|[+-]\d{2}:\d{2}$/.test(text) ? text : `${text}Z`);
const DAY_MS = 86_400_000;

export function simFinances(
  txs: () => Iterable<SimTransaction & { completedAt?: string }>,
  opts: SimStatementsOptions,
  deps: {
    url: () => string;
    client: HttpClient;
    later: (ms: number, fn: () => void | Promise<void>) => void;
    log: (l: string) => void;
    /** the headers of a callback of `body` to `url` (signed as pawaPay signs its callbacks) */
    sign: (url: string, body: string) => Promise<Record<string, string>>;
  },
) {
  const fees = new Map<string, number>();
  const amounts = new Map<string, number>();
  const omitted = new Set<string>();
  const extra: StatementRow[] = [];
  const statements = new Map<string, SimStatement>();
  const feeOf = (amount: number) => Math.floor((amount * (opts.feeBps ?? 0) + 5000) / 10000);

  function rows(): StatementRow[] {
    const out: StatementRow[] = [...extra];
    for (const tx of txs()) {
      if (tx.status !== 'COMPLETED' || !tx.completedAt || omitted.has(tx.id)) continue;
      const asked = decimalToMinor(tx.amount, tx.currency) ?? 0;
      const amount = amounts.get(tx.id) ?? asked;
      const type = tx.kind === 'deposit' ? 'DEPOSIT' : tx.kind === 'payout' ? 'PAYOUT' : 'REFUND';
      out.push({
        created: new Date(tx.completedAt),
        type,
        id: tx.id,
        providerRef: providerRefOf(tx.id),
        msisdn: tx.phoneNumber,
        provider: tx.provider,
        amount: type === 'DEPOSIT' ? amount : -amount,
        fee: fees.get(tx.id) ?? feeOf(amount),
        currency: tx.currency,
      });
    }
    return out.sort((a, b) => a.created.getTime() - b.created.getTime());
  }

  const balance = (currency: Currency) =>
    rows()
      .filter((r) => r.currency === currency)
      .reduce((s, r) => s + r.amount - r.fee, 0);

  function csv(s: SimStatement): Buffer {
    const from = utc(s.startDate);
    const to = utc(s.endDate);
    let running = 0;
    const lines = [HEADER.join(',')];
    for (const r of rows().filter((x) => x.currency === s.wallet.currency)) {
      running += r.amount - r.fee;
      const t = r.created.getTime();
      if (t < from || t >= to) continue;
      const dec = (minor: number) => (minor < 0 ? '-' : '') + minorToDecimal(Math.abs(minor), r.currency, true);
      lines.push(
        [
          r.created.toISOString().replace('T', ' ').slice(0, 19),
          r.msisdn,
          r.id,
          r.providerRef,
          dec(r.amount),
          dec(r.fee),
          dec(running),
          r.currency,
          'COD',
          r.provider,
          r.type,
          'COMPLETED',
        ]
          .map(field)
          .join(','),
      );
    }
    const text = Buffer.from(`${lines.join('\n')}\n`);
    return s.compressed ? gzipSync(text) : text;
  }

  function reply(res: http.ServerResponse, status: number, body: unknown) {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  const view = (s: SimStatement) => {
    const { callbackUrl: _c, expires: _e, ...out } = s;
    return out;
  };

  /** The answers the statement callbacks got (HTTP status, or 0: no answer), oldest first. */
  const callbackAnswers: { statementId: string; status: number }[] = [];

  async function callback(s: SimStatement) {
    if (!s.callbackUrl) return;
    try {
      const body = JSON.stringify(view(s));
      const res = await deps.client.request(s.callbackUrl, {
        method: 'POST',
        headers: await deps.sign(s.callbackUrl, body),
        body,
        timeoutMs: 5000,
      });
      callbackAnswers.push({ statementId: s.statementId, status: res.status });
      deps.log(`pawapay-sim: statement callback ${s.statementId} → HTTP ${res.status}`);
    } catch (err) {
      callbackAnswers.push({ statementId: s.statementId, status: 0 });
      deps.log(`pawapay-sim: statement callback failed: ${(err as Error).message}`);
    }
  }

  /** Answers a finances request; false when the path is none of them. */
  function handle(method: string, path: string, raw: Buffer, res: http.ServerResponse): boolean {
    if (method === 'GET' && path === '/v2/wallet-balances') {
      const balances = (['CDF', 'USD'] as Currency[]).map((c) => {
        const b = balance(c);
        return {
          country: 'COD',
          balance: (b < 0 ? '-' : '') + minorToDecimal(Math.abs(b), c, true),
          currency: c,
          provider: '',
        };
      });
      reply(res, 200, { balances });
      return true;
    }
    if (method === 'POST' && path === '/v2/statements') {
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        reply(res, 400, {
          status: 'REJECTED',
          failureReason: { failureCode: 'INVALID_INPUT', failureMessage: 'not JSON' },
        });
        return true;
      }
      const check = checkContract('statementRequest', body);
      if (!check.ok) {
        reply(res, 400, {
          status: 'REJECTED',
          failureReason: { failureCode: 'INVALID_PARAMETER', failureMessage: describeErrors(check.errors) },
        });
        return true;
      }
      const b = body as {
        wallet: SimStatement['wallet'];
        startDate: string;
        endDate: string;
        compressed?: boolean;
        callbackUrl?: string;
      };
      const span = utc(b.endDate) - utc(b.startDate);
      if (!(span > 0) || span > 31 * DAY_MS) {
        reply(res, 200, {
          status: 'REJECTED',
          failureReason: {
            failureCode: 'INVALID_PARAMETER',
            failureMessage: 'The date range must be positive and at most 31 days.',
          },
        });
        return true;
      }
      const s: SimStatement = {
        statementId: randomUUID(),
        status: 'PROCESSING',
        wallet: b.wallet,
        created: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
        startDate: b.startDate,
        endDate: b.endDate,
        compressed: b.compressed === true,
        callbackUrl: b.callbackUrl,
      };
      statements.set(s.statementId, s);
      deps.later(opts.buildMs ?? 200, async () => {
        s.status = 'COMPLETED';
        s.expires = Date.now() + DAY_MS;
        s.downloadUrl = `${deps.url()}/_files/statements/${s.statementId}${s.compressed ? '.csv.gz' : '.csv'}`;
        await callback(s);
      });
      reply(res, 200, { statementId: s.statementId, status: 'ACCEPTED', created: s.created });
      return true;
    }
    const m = /^\/v2\/statements\/([^/]+)$/.exec(path);
    if (method === 'GET' && m) {
      const s = statements.get(decodeURIComponent(m[1]));
      reply(res, 200, s ? { status: 'FOUND', data: view(s) } : { status: 'NOT_FOUND' });
      return true;
    }
    return false;
  }

  /** The download (no token: the URL is the permission, for a day). */
  function download(path: string, res: http.ServerResponse): boolean {
    const m = /^\/_files\/statements\/([0-9a-f-]{36})\.csv(\.gz)?$/.exec(path);
    if (!m) return false;
    const s = statements.get(m[1]);
    if (!s || s.status !== 'COMPLETED' || Date.now() > (s.expires ?? 0)) {
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end('expired or unknown');
      return true;
    }
    const body = csv(s);
    res.writeHead(200, {
      'content-type': s.compressed ? 'application/gzip' : 'text/csv',
      'content-length': body.length,
    });
    res.end(body);
    return true;
  }

  const finances: SimFinances = {
    reverse(depositId) {
      const tx = [...txs()].find((t) => t.id === depositId && t.kind === 'deposit' && t.status === 'COMPLETED');
      if (!tx) throw new Error(`no completed deposit ${depositId}`);
      const amount = amounts.get(tx.id) ?? decimalToMinor(tx.amount, tx.currency)!;
      extra.push({
        created: new Date(),
        type: 'DEPOSIT_REVERSAL',
        id: tx.id,
        providerRef: `REV${providerRefOf(tx.id).slice(3)}`,
        msisdn: tx.phoneNumber,
        provider: tx.provider,
        amount: -amount,
        fee: 0,
        currency: tx.currency,
      });
    },
    setFee: (id, fee) => void fees.set(id, fee),
    omit: (id) => void omitted.add(id),
    setAmount: (id, amount) => void amounts.set(id, amount),
    foreignDeposit(amount, currency) {
      const id = randomUUID();
      extra.push({
        created: new Date(),
        type: 'DEPOSIT',
        id,
        providerRef: providerRefOf(id),
        msisdn: '243810000789',
        provider: 'VODACOM_MPESA_COD',
        amount,
        fee: feeOf(amount),
        currency,
      });
      return id;
    },
    rows,
    balance,
    statementCallbacks: () => [...callbackAnswers],
  };
  return { handle, download, finances };
}
