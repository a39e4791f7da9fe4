/**
 * Liveness under `npm start` (docs/decisions.md#processes): a supervised process tells its
 * supervisor (scripts/start.ts) over IPC, three times per HEARTBEAT_TIMEOUT_MS, that its event loop
 * still turns; past the timeout without a beat (SIGSTOPped, stuck in a loop) it is killed and
 * started again. Before its first beat a process has STARTING_GRACE_MS. A process whose supervisor
 * is gone stops. Without IPC: nothing.
 */
export const HEARTBEAT = 'heartbeat';
export const STARTING_GRACE_MS = 60_000;

/** HEARTBEAT_TIMEOUT_MS (default 30 s); the supervisor and its children read the same environment. */
export function heartbeatTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const ms = Number(env.HEARTBEAT_TIMEOUT_MS);
  return Number.isInteger(ms) && ms >= 1000 ? ms : 30_000;
}

export function beatForSupervisor(): void {
  const send = process.send?.bind(process);
  if (!send) return;
  const beat = () => {
    // the supervisor gone (its channel closed): nothing to tell
    if (process.connected) send({ type: HEARTBEAT }, undefined, undefined, () => undefined);
  };
  beat();
  setInterval(beat, heartbeatTimeoutMs() / 3).unref();
  // the channel must not keep a process alive that has finished its work
  process.channel?.unref();
  // the supervisor gone (killed, its channel closed): stop as on SIGTERM rather than live on unseen, holding a port
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}
