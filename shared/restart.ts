/**
 * The restart backoff of a supervised process (docs/decisions.md#faults-and-limits), for `npm start`
 * and the web's cluster primary: 1 s after its first death, doubling up to 30 s; a process that
 * ran 10 s before dying starts again after 1 s.
 */
export const FIRST_BACKOFF_MS = 1000;
export const MAX_BACKOFF_MS = 30_000;
const STABLE_MS = 10_000;

/** The wait before the next start of a process that died after running `ranMs`, its previous wait being `lastMs` (0: none yet). */
export function nextBackoff(lastMs: number, ranMs: number): number {
  if (lastMs === 0 || ranMs >= STABLE_MS) return FIRST_BACKOFF_MS;
  return Math.min(lastMs * 2, MAX_BACKOFF_MS);
}
