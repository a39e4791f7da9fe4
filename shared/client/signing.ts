import { createHmac, randomUUID } from 'node:crypto';

/**
 * The request signature of docs/decisions.md#merchant-pipeline, for merchants and for this service's own tests:
 * lowercase hex HMAC-SHA256, keyed by the merchant secret, over
 * `<timestamp>.<METHOD>.<path>.<raw body>`.
 */
export function signRequest(
  secret: string,
  timestamp: string,
  method: string,
  path: string,
  body: string | Buffer,
): string {
  return createHmac('sha256', secret)
    .update(`${timestamp}.${method.toUpperCase()}.${path}.`)
    .update(body)
    .digest('hex');
}

export interface ClientOptions {
  baseUrl: string;
  apiKey: string;
  secret: string;
  /**
   * Called with every answer before it is returned (e.g. a test checking each one against the
   * OpenAPI document); an exception thrown here is the request's.
   */
  onResponse?: (response: ResponseInfo) => void;
  /** Milliseconds since the Unix epoch that X-Timestamp is taken from (default `Date.now`). */
  now?: () => number;
  /** the fetch to send with (default: the global one), e.g. one trusting a private CA */
  fetch?: typeof fetch;
}

/** One answer with the request it answers. */
export interface ResponseInfo extends ClientResponse {
  method: string;
  /** The path and query as requested. */
  path: string;
}

export interface RequestOptions {
  /** An object is serialised once; a string or Buffer is sent byte for byte. */
  body?: unknown;
  /** Idempotency-Key: `true` (default on POST /v1/payments and /v1/payouts) makes a new UUID v4. */
  idempotencyKey?: string | boolean;
  headers?: Record<string, string>;
  /** Override the X-Timestamp (seconds); defaults to now. */
  timestamp?: number | string;
  /** Headers to leave out (case-insensitive), e.g. a test sending no X-Signature. */
  omitHeaders?: string[];
}

export interface ClientResponse<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

/** The spec signs POST, PATCH and DELETE; the service also requires it on PUT. */
const SIGNED = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
const JSON_METHODS = new Set(['POST', 'PATCH', 'PUT']);
const IDEMPOTENT_PATHS = new Set(['/v1/payments', '/v1/payouts', '/v1/payment_links']);

/** A merchant's HTTP client: bearer key, timestamp, signature and idempotency key built for each request. */
export class ServiceClient {
  constructor(readonly opts: ClientOptions) {}

  /** Sends the request and hands its answer to `onResponse` (whose exception is the request's). */
  async request<T = any>(method: string, pathWithQuery: string, o: RequestOptions = {}): Promise<ClientResponse<T>> {
    const response = await this.send<T>(method, pathWithQuery, o);
    this.answered(method, pathWithQuery, response);
    return response;
  }

  /** Hands an answer of `send` to `onResponse`. */
  answered(method: string, pathWithQuery: string, response: ClientResponse): void {
    this.opts.onResponse?.({ ...response, method: method.toUpperCase(), path: pathWithQuery });
  }

  /** Sends the request; its answer is not yet handed to `onResponse` (a throw here means no answer came). */
  async send<T = any>(method: string, pathWithQuery: string, o: RequestOptions = {}): Promise<ClientResponse<T>> {
    method = method.toUpperCase();
    const headers: Record<string, string> = { Authorization: `Bearer ${this.opts.apiKey}` };
    let raw: string | Buffer | undefined;
    if (o.body !== undefined)
      raw = typeof o.body === 'string' || Buffer.isBuffer(o.body) ? o.body : JSON.stringify(o.body);
    // POST, PATCH and PUT are JSON even when empty (the service answers 415 to one without the type)
    if (raw !== undefined || JSON_METHODS.has(method)) headers['Content-Type'] = 'application/json';
    const path = pathWithQuery.split('?')[0];
    if (SIGNED.has(method)) {
      const ts = String(o.timestamp ?? Math.floor((this.opts.now ?? Date.now)() / 1000));
      headers['X-Timestamp'] = ts;
      headers['X-Signature'] = signRequest(this.opts.secret, ts, method, path, raw ?? '');
    }
    const idem = o.idempotencyKey ?? (method === 'POST' && IDEMPOTENT_PATHS.has(path));
    if (idem) headers['Idempotency-Key'] = typeof idem === 'string' ? idem : randomUUID();
    Object.assign(headers, o.headers);
    for (const name of o.omitHeaders ?? []) {
      for (const k of Object.keys(headers)) if (k.toLowerCase() === name.toLowerCase()) delete headers[k];
    }
    const res = await (this.opts.fetch ?? fetch)(this.opts.baseUrl + pathWithQuery, { method, headers, body: raw });
    const text = await res.text();
    let body: any = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: left as text */
    }
    return { status: res.status, headers: res.headers, text, body };
  }

  get<T = any>(path: string, o?: RequestOptions) {
    return this.request<T>('GET', path, o);
  }

  post<T = any>(path: string, body?: unknown, o: RequestOptions = {}) {
    return this.request<T>('POST', path, { ...o, body });
  }

  patch<T = any>(path: string, body?: unknown, o: RequestOptions = {}) {
    return this.request<T>('PATCH', path, { ...o, body });
  }

  delete<T = any>(path: string, o: RequestOptions = {}) {
    return this.request<T>('DELETE', path, o);
  }
}
