/**
 * Reading the environment: the helpers every settings loader uses (shared/config.ts and each
 * connector's `settings.ts`). A bad value throws a ConfigError naming the variable; the process
 * stops with it at start-up (shared/config.ts `getConfig`).
 */

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {}

/** Only https in production; http too elsewhere (simulators, local sandboxes). */
export const urlProtocols = (production: boolean): string[] => (production ? ['https:'] : ['http:', 'https:']);

export function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

export function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw !== 'true' && raw !== 'false') throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  return raw === 'true';
}

export function url(env: Env, name: string, fallback: string, protocols: string[]): string {
  const raw = env[name] || fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return raw.replace(/\/$/, '');
}

export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw))
    throw new ConfigError(`${name} must be one of ${allowed.join(', ') || '(none)'}, got "${raw}"`);
  return raw as T;
}

/** A set of variables that go together: all or none (a half-configured connector refuses to start). */
export function together(env: Env, names: string[]): boolean {
  const given = names.filter((n) => env[n]);
  if (given.length > 0 && given.length < names.length) {
    throw new ConfigError(
      `${names.join(', ')} must be set together (missing: ${names.filter((n) => !env[n]).join(', ')})`,
    );
  }
  return given.length === names.length;
}

/** A PEM given in one line (\n escaped, as environment files hold it) or several. */
export const pem = (raw: string) => raw.replace(/\\n/g, '\n');

// development secrets that ship with the code (public): production refuses each of them
export const DEV_SANDBOX_CALLBACK_SECRET = 'sandbox-callback-secret';
export const DEV_CARD_CALLBACK_SECRET = 'card-sandbox-callback-secret';
/** a callback secret that ships with the code lets anyone sign a callback: production refuses each as any provider's secret */
export const DEV_CALLBACK_SECRETS: readonly string[] = [DEV_SANDBOX_CALLBACK_SECRET, DEV_CARD_CALLBACK_SECRET];
