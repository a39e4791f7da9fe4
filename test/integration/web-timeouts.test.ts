import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import { ADMIN_TOKEN, startTestEnv, type TestEnv } from '../helpers/env';
import { freePort } from '../../scripts/lib/ports';

/**
 * Slow clients (docs/settings.md#settings: WEB_HEADERS_TIMEOUT_MS, WEB_REQUEST_TIMEOUT_MS): the web process (api/server.ts, as the Procfile runs it) drops a
 * client that has not sent its headers within WEB_HEADERS_TIMEOUT_MS, or its whole request within
 * WEB_REQUEST_TIMEOUT_MS, about a second past the bound (Node's default check every 30 s let
 * them stay up to 66 s). Bounds are shortened here to 1 s and 2 s.
 */
describe('web process: slow clients', () => {
  let env: TestEnv;
  let port: number;

  before(async () => {
    env = await startTestEnv();
    port = await freePort();
    await env.spawn('api/server.ts', {
      PORT: String(port),
      WEB_HEADERS_TIMEOUT_MS: '1000',
      WEB_REQUEST_TIMEOUT_MS: '2000',
      WEB_LISTEN_BACKLOG: '1234',
    });
  });
  after(() => env.close());

  /** Sends `text`, then nothing more; resolves with the ms until the server closes the socket and what it answered. */
  function hold(text: string): Promise<{ ms: number; answer: string }> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      let answer = '';
      const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => (answer += d));
      socket.on('error', reject);
      socket.on('close', () => resolve({ ms: Date.now() - started, answer }));
      setTimeout(() => {
        socket.destroy();
        reject(new Error('the server kept a slow client for 10 s'));
      }, 10_000).unref();
    });
  }

  it("listens with a queue of WEB_LISTEN_BACKLOG new connections (the Send-Q of a listening socket), not Node's 511", () => {
    const [line] = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' })
      .trim()
      .split('\n');
    expect(line.split(/\s+/)[2]).to.equal('1234');
  });

  it('answers a whole request at once', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/health/live`);
    expect(res.status).to.equal(200);
  });

  it('drops a client whose headers do not arrive within the bound (408), about a second past it', async () => {
    const { ms, answer } = await hold('GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    expect(answer).to.match(/^HTTP\/1\.1 408/);
    expect(ms).to.be.within(900, 3500);
  });

  it('drops a client whose body does not arrive within the request bound (408)', async () => {
    const { ms, answer } = await hold(
      `POST /admin/merchants HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`,
    );
    expect(answer).to.match(/^HTTP\/1\.1 408/);
    expect(ms).to.be.within(1900, 4500);
  });
});
