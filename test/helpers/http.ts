import http, { type IncomingHttpHeaders } from 'node:http';
import net from 'node:net';

/** An answer's body as the tests read it: its JSON when it is JSON, undefined when empty, else its text. */
export function parsedBody(text: string): any {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  body: any;
}

/**
 * One HTTP request with full control over the headers (fetch refuses to set Content-Length or
 * to send a length without its body). `body` undefined sends none; a declared Content-Length
 * header without a body sends the head only.
 */
export function send(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: Buffer | string,
): Promise<RawResponse> {
  const url = new URL(baseUrl);
  const framed = Object.keys(headers).some((h) => /^(content-length|transfer-encoding)$/i.test(h));
  // Node frames a GET/DELETE/OPTIONS body with nothing by default: the server would read it as a next request
  if (body !== undefined && !framed) headers = { ...headers, 'Content-Length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsedBody(text) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Writes raw bytes on a fresh TCP connection and returns the status of the first response
 * (0 when the server closed without answering). For requests no HTTP client would send. The
 * connection is half-closed only after `graceMs` without an answer (an incomplete request):
 * Node aborts a request still running when its client half-closes.
 */
export function sendRaw(
  baseUrl: string,
  bytes: Buffer | string,
  timeoutMs = 5000,
  graceMs = 1000,
): Promise<{ status: number; head: string }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(halfClose);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: m ? Number(m[1]) : 0, head: text.split('\r\n\r\n')[0] });
    };
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      socket.destroy();
      reject(new Error('no answer from the server in time'));
    }, timeoutMs);
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      // one response head is enough
      if (Buffer.concat(chunks).includes('\r\n\r\n')) finish();
    });
    socket.on('end', finish);
    socket.on('close', finish);
    socket.on('error', finish);
    let halfClose: NodeJS.Timeout | undefined;
    socket.write(bytes, () => {
      halfClose = setTimeout(() => socket.end(), graceMs);
    });
  });
}
