/** True when `err` is Postgres refusing a duplicate on the unique constraint `constraint`. */
export function isUniqueViolation(err: unknown, constraint: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e.code === '23505' && e.constraint === constraint;
}
