import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How long and how much a refused request's connection keeps reading after its answer: about
 * nginx's `lingering_timeout` (5 s), and far above any body a client sends on to a 413 it has
 * not read yet (a payment's limit is 100 KB; the global one 500 MB is never read).
 */
export const LINGER = { ms: 5_000, bytes: 16 * 1024 * 1024 };

const lingering = new WeakSet<Socket>();

/**
 * A lingering close, as nginx's: a request refused before its body was read (413) is answered,
 * then the connection stops writing (FIN) and reads and discards what the client still sends,
 * until the body is complete, the client closes, or `limits` (time since the answer, bytes
 * discarded) are reached; then it closes. Closing at once with unread bytes makes the kernel
 * reset the connection, and a client still writing gets EPIPE or ECONNRESET instead of the answer.
 *
 * Node ends a `Connection: close` answer's socket with `socket.destroySoon()` once the answer is
 * written (http's resOnFinish): this socket's own destroySoon lingers instead.
 */
export function lingerAfterAnswer(req: IncomingMessage, limits = LINGER): void {
  const socket = req.socket as Socket | null;
  if (!socket || socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  let discarded = 0;
  let bodyDone = req.complete;
  let answered = false;
  let timer: NodeJS.Timeout | undefined;
  const close = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  // the rest of the body, read and dropped (raw-body pauses the request at its limit; a paused
  // request stops the socket, and the client's writes with it)
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > limits.bytes) close();
  });
  req.once('end', () => {
    bodyDone = true;
    if (answered) close();
  });
  req.resume();
  socket.once('end', close);
  socket.destroySoon = () => {
    answered = true;
    // nothing more is written after the answer; the reading side stays open
    if (socket.writable) socket.end();
    if (bodyDone) return void socket.once('finish', close);
    timer = setTimeout(close, limits.ms);
    timer.unref();
  };
}
