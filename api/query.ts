import { ValidationFailed } from '../shared/errors';

/** A query parameter given more than once arrives as an array: the last value counts. */
export const lastValue = (v: string | string[] | undefined) => (Array.isArray(v) ? v[v.length - 1] : v);

/** A route that takes no query parameters refuses any (400 validation-failed naming the first). */
export function refuseQuery(query: Record<string, unknown>): void {
  const [first] = Object.keys(query);
  if (first !== undefined) throw new ValidationFailed(first, `${first} is not a known query parameter`);
}
