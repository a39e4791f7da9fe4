import http from 'node:http';
import https from 'node:https';

/**
 * A plain HTTP(S) client over kept-alive connections, for the calls the service makes on its hot
 * path (provider requests, the sandbox's callbacks): node:http costs a fraction of the CPU of
 * fetch (undici's web streams) per request. Redirects are never followed (a 3xx is an answer).
 * The webhook sender has its own client (shared/webhooks/http.ts: address checks at connect).
 */

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface HttpCall {
  method: string;
  headers?: Record<string, string>;
  body?: string;
  /** the whole call, connection to the answer's last byte */
  timeoutMs: number;
}

/** A call that got no answer in time: `name` is 'TimeoutError', as fetch's. */
export class HttpTimeout extends Error {
  override name = 'TimeoutError';
}

export class HttpClient {
  private readonly agents: { http: http.Agent; https: https.Agent };

  constructor(maxSockets = 64) {
    this.agents = {
      http: new http.Agent({ keepAlive: true, maxSockets }),
      https: new https.Agent({ keepAlive: true, maxSockets }),
    };
  }

  /** Resolves with the answer (any status); rejects on a network failure or HttpTimeout. */
  request(url: string, call: HttpCall): Promise<HttpAnswer> {
    return new Promise((resolve, reject) => {
      const secure = url.startsWith('https:');
      const headers =
        call.body === undefined
          ? call.headers
          : { ...call.headers, 'Content-Length': String(Buffer.byteLength(call.body)) };
      const fail = (err: Error) => {
        clearTimeout(timer);
        reject(err);
      };
      const onResponse = (res: http.IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
        });
        res.on('error', fail);
      };
      // a bad URL throws here, which rejects the promise
      const req = secure
        ? https.request(url, { method: call.method, headers, agent: this.agents.https }, onResponse)
        : http.request(url, { method: call.method, headers, agent: this.agents.http }, onResponse);
      const timer = setTimeout(
        () => req.destroy(new HttpTimeout(`no answer within ${call.timeoutMs} ms`)),
        call.timeoutMs,
      );
      req.on('error', fail);
      req.end(call.body);
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
