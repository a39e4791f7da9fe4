/**
 * Liveness under `npm start` (decisions.md "Processes"): a supervised process tells its
 * supervisor (scripts/start.ts), over the IPC channel it was started with, six times per
 * HEARTBEAT_TIMEOUT_MS (30 s: every 5 s) that its event loop still turns. A process that stops
 * answering (SIGSTOPped, stuck in a loop) stops beating; past the timeout without a beat the
 * supervisor kills it and starts it again. Before its first beat a process is starting (loading,
 * compiling) and has STARTING_GRACE_MS. Outside a supervisor (no IPC channel) this does nothing.
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
  setInterval(beat, heartbeatTimeoutMs() / 6).unref();
  // the channel must not keep a process alive that has finished its work
  process.channel?.unref();
}
