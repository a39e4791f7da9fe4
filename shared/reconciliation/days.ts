/**
 * Business days (docs/reconciliation.md#business-day): a day in the configured time zone
 * (RECONCILIATION_TIME_ZONE, Africa/Kinshasa by default), as `YYYY-MM-DD`, and its bounds in UTC.
 */

const formats = new Map<string, Intl.DateTimeFormat>();
function format(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formats.set(timeZone, f);
  }
  return f;
}

function parts(t: number, timeZone: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of format(timeZone).formatToParts(new Date(t))) if (p.type !== 'literal') out[p.type] = Number(p.value);
  return out;
}

/** The zone's offset from UTC at instant t (ms). */
function offsetAt(t: number, timeZone: string): number {
  const p = parts(t, timeZone);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(t / 1000) * 1000;
}

export const DAY = /^\d{4}-\d{2}-\d{2}$/;

export function isDay(text: string): boolean {
  return (
    DAY.test(text) &&
    !Number.isNaN(Date.parse(`${text}T00:00:00Z`)) &&
    new Date(`${text}T00:00:00Z`).toISOString().startsWith(text)
  );
}

/** The business day of instant t. */
export function businessDay(t: number, timeZone: string): string {
  const p = parts(t, timeZone);
  return `${p.year}-${String(p.month).padStart(2, '0')}-${String(p.day).padStart(2, '0')}`;
}

/** The UTC instant the business day starts. */
export function dayStart(day: string, timeZone: string): number {
  const midnightUtc = Date.parse(`${day}T00:00:00Z`);
  const first = midnightUtc - offsetAt(midnightUtc, timeZone);
  // across a change of offset the first guess is an hour off: once more with the offset there
  return midnightUtc - offsetAt(first, timeZone);
}

/** [start, end) of the business day, UTC ms. */
export function dayBounds(day: string, timeZone: string): { start: number; end: number } {
  const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  return { start: dayStart(day, timeZone), end: dayStart(next, timeZone) };
}

/** The day before `day`. */
export function previousDay(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
}
