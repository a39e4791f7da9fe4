import { expect } from 'chai';
import net from 'node:net';
import { startTestEnv, type MerchantFixture, type TestEnv } from '../helpers/env';

/**
 * A body refused for its size (413 payload-too-large) is answered before it is read. The client
 * may still be writing it: the service answers, stops writing, and reads and discards what
 * still arrives for a bounded time and size before it closes (a lingering close, as nginx's).
 * Closing at once with unread bytes makes the kernel reset the connection, and a client still
 * writing then gets EPIPE or ECONNRESET instead of its 413.
 */

const BODY_BYTES = 3 * 1024 * 1024;
const CHUNK = 64 * 1024;
const ROUNDS = 50;
/** the pause after each 64 KB written (about 30 MB/s): on loopback an unpaced 3 MB fits in the socket buffers at once */
const PACE_MS = 2;

interface Outcome {
  /** the status of the answer read (0: none) */
  status: number;
  body: string;
  /** what the socket reported, if anything (EPIPE, ECONNRESET) */
  error: string | null;
}

/**
 * Sends `head` then a 3 MB body (with a length, or chunked) as fast as the socket takes it, and
 * reads the answer once the body is written, as a client that writes its request before it
 * reads does (a reset meanwhile loses the answer: the kernel drops what was not read).
 */
function sendLarge(port: number, head: string, framing: 'length' | 'chunked'): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let error: string | null = null;
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(received).toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      resolve({ status: m ? Number(m[1]) : 0, body: text.split('\r\n\r\n').slice(1).join('\r\n\r\n'), error });
    };
    const timer = setTimeout(() => {
      error ??= 'timeout';
      settle();
    }, 20_000);
    socket.pause();
    socket.on('data', (c: Buffer) => received.push(c));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      error ??= err.code ?? err.message;
      settle();
    });
    socket.on('close', settle);
    const filler = Buffer.alloc(CHUNK, 0x61);
    const frame = (data: Buffer) =>
      framing === 'chunked'
        ? Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')])
        : data;
    socket.once('connect', async () => {
      socket.write(
        `${head}${framing === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${BODY_BYTES}`}\r\n\r\n`,
      );
      for (let sent = 0; sent < BODY_BYTES && !socket.destroyed; sent += CHUNK) {
        if (!socket.write(frame(filler)))
          await new Promise<void>((r) => {
            socket.once('drain', r);
            socket.once('close', r);
          });
        // a link slower than loopback: the body is still on its way when the answer is sent
        await new Promise((r) => setTimeout(r, PACE_MS));
      }
      if (!socket.destroyed) {
        if (framing === 'chunked') socket.end('0\r\n\r\n');
        else socket.end();
        socket.resume();
      }
    });
  });
}

describe('a 413 reaches a client still writing its body (lingering close)', function () {
  this.timeout(300_000);
  let env: TestEnv;
  let shop: MerchantFixture;
  let port: number;

  before(async () => {
    // 100 payment requests in a row: above the default per-key rate limit
    env = await startTestEnv({ RATE_LIMIT_PER_MINUTE: '100000' });
    shop = await env.merchant();
    port = Number(new URL(env.baseUrl).port);
  });
  after(async () => {
    await env?.close();
  });

  const paymentHead = () =>
    `POST /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${shop.credential.api_key}\r\n` +
    `X-Timestamp: ${Math.floor(env.clock.now() / 1000)}\r\nX-Signature: ${'0'.repeat(64)}\r\n` +
    `Idempotency-Key: k\r\nContent-Type: application/json\r\n`;
  const callbackHead = () =>
    `POST /callbacks/vodacom-sandbox HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n`;

  it('reads for a bounded time and size only: a client that keeps writing is closed, after its 413', async () => {
    const declared = 400 * 1024 * 1024;
    // it goes on writing after the service's FIN (a client that does not read while it writes)
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const received: Buffer[] = [];
    socket.on('data', (c: Buffer) => received.push(c));
    let written = 0;
    const ended = new Promise<string>((resolve) => {
      socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      socket.on('close', () => resolve('closed'));
    });
    await new Promise<void>((r) => socket.once('connect', r));
    socket.write(`${paymentHead()}Content-Length: ${declared}\r\n\r\n`);
    const filler = Buffer.alloc(CHUNK, 0x61);
    while (!socket.destroyed && written < declared) {
      if (!socket.write(filler))
        await Promise.race([
          new Promise((r) => socket.once('drain', r)),
          ended,
          new Promise((r) => setTimeout(r, 1000)),
        ]);
      written += CHUNK;
      await new Promise((r) => setTimeout(r, PACE_MS));
    }
    await ended;
    socket.destroy();
    expect(Buffer.concat(received).toString('latin1')).to.match(/^HTTP\/1\.1 413 /);
    expect(written, 'the service closed before the declared body was all sent').to.be.below(declared);
  });

  for (const [route, head] of [
    ['POST /v1/payments', paymentHead],
    ['POST /callbacks/vodacom-sandbox', callbackHead],
  ] as const) {
    for (const framing of ['length', 'chunked'] as const) {
      it(`${route}: 3 MB ${framing === 'length' ? 'with a Content-Length' : 'chunked'}, ${ROUNDS} times: each reads its 413`, async () => {
        const failures: string[] = [];
        for (let i = 0; i < ROUNDS; i++) {
          const o = await sendLarge(port, head(), framing);
          if (o.status !== 413 || !o.body.includes('"payload-too-large"'))
            failures.push(`round ${i + 1}: status ${o.status}, ${o.error ?? 'no socket error'}`);
        }
        expect(failures).to.deep.equal([]);
      });
    }
  }
});
