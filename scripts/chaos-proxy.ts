import net from 'node:net';

/**
 * The TCP proxy the chaos drill puts between the service and Postgres, to partition them. It
 * forwards 127.0.0.1:port to the target until `partition(ms)`: for that long it forwards nothing
 * either way on the open connections (what either side sends, or a close, waits, as a
 * partitioned network's packets would) and accepts new connections without answering them; when
 * the partition ends, everything held is delivered in order and forwarding goes on.
 */
export interface TcpProxy {
  /** Resolves when the partition is over. */
  partition(ms: number): Promise<void>;
  close(): void;
}

export function startTcpProxy(port: number, target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  /** the steps held while partitioned, in the order they happened; null when connected */
  let held: (() => void)[] | null = null;
  const deliver = (step: () => void) => (held ? held.push(step) : step());

  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    // a reset or refusal: 'close' follows, and carries it to the other side
    socket.on('error', () => undefined);
  };
  const forward = (from: net.Socket, to: net.Socket) => {
    from.on('data', (chunk) =>
      deliver(() => {
        if (!to.destroyed && !to.write(chunk)) from.pause();
      }),
    );
    to.on('drain', () => from.resume());
    from.on('close', (hadError) => deliver(() => (hadError ? to.destroy() : to.end())));
  };

  const server = net.createServer((client) => {
    const upstream = new net.Socket();
    track(client);
    track(upstream);
    forward(client, upstream);
    forward(upstream, client);
    // held while partitioned: the client is accepted, and nothing answers it
    deliver(() => (client.destroyed ? upstream.destroy() : upstream.connect(target.port, target.host)));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve({
        async partition(ms) {
          held = [];
          await new Promise((r) => setTimeout(r, ms));
          const steps = held;
          held = null;
          for (const step of steps) step();
        },
        close() {
          held = null;
          server.close();
          for (const socket of sockets) socket.destroy();
        },
      });
    });
  });
}
