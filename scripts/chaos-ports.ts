import net from 'node:net';

/** Whether `port` can be listened on, on every address (the web listens on all of them): a trial listen, closed at once. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** The roles (keys of `ports`) whose port something else already holds, with that port. */
export async function takenPorts(ports: Record<string, number>): Promise<{ role: string; port: number }[]> {
  const taken: { role: string; port: number }[] = [];
  for (const [role, port] of Object.entries(ports)) if (!(await portFree(port))) taken.push({ role, port });
  return taken;
}

/** The port named by a process's "listen EADDRINUSE: address already in use 127.0.0.1:5605" line, if it is one. */
export function portInUseIn(line: string): number | undefined {
  const m = /EADDRINUSE.*?:(\d{1,5})\b/.exec(line);
  return m ? Number(m[1]) : undefined;
}
