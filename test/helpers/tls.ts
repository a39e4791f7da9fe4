import https from 'node:https';
import tls from 'node:tls';

/** What a TLS handshake with the edge gave: the protocol, or the error that ended it. */
export async function handshake(
  port: number,
  ca: string,
  version: tls.SecureVersion,
): Promise<{ protocol: string | null } | { error: string }> {
  return new Promise((resolve) => {
    const socket = tls.connect(
      { host: '127.0.0.1', port, ca, servername: 'localhost', minVersion: version, maxVersion: version },
      () => {
        resolve({ protocol: socket.getProtocol() });
        socket.end();
      },
    );
    socket.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
  });
}

/**
 * A fetch over node:https that trusts `ca` (the global fetch trusts only the system's CAs and
 * NODE_EXTRA_CA_CERTS read at start): for clients of the local TLS edge. It also gives the
 * protocol of each answer's connection in the `x-test-tls-protocol` header.
 */
export function fetchTrusting(ca: string): typeof fetch {
  return async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const body =
      init.body === undefined || init.body === null ? undefined : Buffer.from(init.body as string | Uint8Array);
    return new Promise<Response>((resolve, reject) => {
      const req = https.request(
        url,
        { method: init.method ?? 'GET', headers: init.headers as Record<string, string>, ca, agent: false },
        (res) => {
          const protocol = (res.socket as tls.TLSSocket).getProtocol?.() ?? 'none';
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const headers = new Headers();
            for (const [k, v] of Object.entries(res.headers))
              if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
            headers.set('x-test-tls-protocol', protocol);
            const status = res.statusCode ?? 0;
            resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers }));
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  };
}
