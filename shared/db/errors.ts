/**
 * True when `err` is Postgres refusing a duplicate on the unique constraint `constraint`, raised
 * through knex (pg's error) or through an objection model (which wraps it as `nativeError`).
 */
export function isUniqueViolation(err: unknown, constraint: string): boolean {
  const wrapped = err as { nativeError?: unknown } | null;
  const e = (wrapped?.nativeError ?? err) as { code?: string; constraint?: string };
  return e.code === '23505' && e.constraint === constraint;
}
