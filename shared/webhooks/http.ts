import http from 'node:http';
import https from 'node:https';
import { maskText } from '../logger';
import type { Environment } from '../db/models';
import { DestinationRefused, checkedLookup, hostOf, urlProblem } from './destination';

/**
 * One webhook attempt over HTTP: POST, no redirect followed, a hard deadline for the whole
 * exchange, keep-alive connections (live and test endpoints never share a socket, so a test
 * endpoint's unchecked connection cannot carry a live delivery).
 */

export interface AttemptResult {
  statusCode: number | null;
  latencyMs: number;
  /** Why the attempt failed without an HTTP answer, or `redirect-not-followed`; null otherwise. */
  error: string | null;
  excerpt: string | null;
}

export interface PostRequest {
  url: string;
  environment: Environment;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

const EXCERPT_CHARS = 200;
const EXCERPT_BYTES = 1024;
/** An answer longer than this is cut off (the connection is dropped): only the status matters. */
const MAX_ANSWER_BYTES = 64 * 1024;

export function makeAgents() {
  const options = { keepAlive: true, keepAliveMsecs: 10_000, maxFreeSockets: 64, scheduling: 'lifo' as const };
  return {
    live: new https.Agent({ ...options, lookup: checkedLookup('live') }),
    test: {
      http: new http.Agent({ ...options, lookup: checkedLookup('test') }),
      https: new https.Agent({ ...options, lookup: checkedLookup('test') }),
    },
  };
}

export type Agents = ReturnType<typeof makeAgents>;

/** A short, masked, single-line excerpt of an answer. */
export function excerptOf(raw: Buffer): string | null {
  if (raw.length === 0) return null;
  const text = maskText(raw.subarray(0, EXCERPT_BYTES).toString('utf8'))
    .replace(/[\p{Cc}\ufffd]+/gu, ' ')
    .trim();
  return text.slice(0, EXCERPT_CHARS) || null;
}

function errorCode(err: NodeJS.ErrnoException): string {
  if (err instanceof DestinationRefused) return `destination-not-allowed: ${err.message.replace(/^destination /, '')}`;
  const code = err.code ?? '';
  if (code === 'ECONNREFUSED') return 'connection-refused';
  if (code === 'ECONNRESET' || code === 'EPIPE' || /socket hang up/i.test(err.message)) return 'connection-reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns-failure';
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code))
    return 'tls-error';
  return `network-error${code ? `: ${code}` : ''}`;
}

export function postWebhook(agents: Agents, req: PostRequest): Promise<AttemptResult> {
  const started = performance.now();
  // checked again before every attempt: the stored URL is re-judged, literal addresses included
  const refused = urlProblem(req.url, req.environment);
  if (refused)
    return Promise.resolve({
      statusCode: null,
      latencyMs: 0,
      error: `destination-not-allowed: url ${refused}`,
      excerpt: null,
    });
  const url = new URL(req.url);
  const secure = url.protocol === 'https:';
  const agent = req.environment === 'live' ? agents.live : secure ? agents.test.https : agents.test.http;
  const body = Buffer.from(req.body, 'utf8');

  return new Promise((resolve) => {
    let done = false;
    let chunks: Buffer[] = [];
    let received = 0;
    let statusCode: number | null = null;
    /** `failure` explains a missing answer; an answer that arrived is judged by its status alone. */
    const finish = (failure: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const redirect = statusCode !== null && statusCode >= 300 && statusCode < 400;
      const error = statusCode === null ? failure : redirect ? 'redirect-not-followed' : null;
      const excerpt = excerptOf(Buffer.concat(chunks));
      chunks = [];
      resolve({ statusCode, latencyMs: Math.round(performance.now() - started), error, excerpt });
    };
    const request = (secure ? https : http).request(
      {
        protocol: url.protocol,
        hostname: hostOf(url),
        port: url.port || undefined,
        path: url.pathname + url.search,
        method: 'POST',
        agent,
        headers: { ...req.headers, 'Content-Length': String(body.length) },
      },
      (res) => {
        statusCode = res.statusCode ?? null;
        res.on('data', (chunk: Buffer) => {
          if (received < EXCERPT_BYTES) chunks.push(chunk);
          received += chunk.length;
          if (received > MAX_ANSWER_BYTES) {
            request.destroy();
            finish('answer-too-long');
          }
        });
        res.on('end', () => finish('connection-reset'));
        res.on('error', () => finish('connection-reset'));
      },
    );
    // the deadline covers the whole exchange; a status that arrived in time still counts
    const timer = setTimeout(() => {
      request.destroy();
      finish('timeout');
    }, req.timeoutMs);
    request.on('error', (err: NodeJS.ErrnoException) => finish(errorCode(err)));
    request.end(body);
  });
}
