/** A query parameter given more than once arrives as an array: the last value counts. */
export const lastValue = (v: string | string[] | undefined) => (Array.isArray(v) ? v[v.length - 1] : v);
