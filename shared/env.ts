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

/**
 * PORT_BASE (unset: each port keeps its own default): moves every port the Procfile opens, so that
 * a second instance runs beside another with one setting. PORT is the base, SANDBOX_PROVIDER_PORT
 * +10, CARD_VAULT_PORT +20, CARD_PROVIDER_PORT +30; ADMIN_PORT and METRICS_PORT_BASE, off unless
 * set, may be written `+N` (the base + N). The URLs derived from them follow; a port or URL set
 * outright wins.
 */
export function portBase(env: Env): number | null {
  return env.PORT_BASE ? int(env, 'PORT_BASE', 0, 1, 65_535 - PORT_BASE_SPAN) : null;
}

/** The highest offset from PORT_BASE a setting may take (METRICS_PORT_BASE=+N with its pools' offsets up to 80). */
export const PORT_BASE_SPAN = 1000;

/** A port's default: PORT_BASE + `offset` when PORT_BASE is set, else its own. */
export function portDefault(env: Env, offset: number, fallback: number): number {
  const base = portBase(env);
  return base === null ? fallback : base + offset;
}

/** A port setting written `+N`: PORT_BASE + N (PORT_BASE must be set); undefined when written outright. */
export function abovePortBase(env: Env, name: string): number | undefined {
  const raw = env[name];
  if (!raw?.startsWith('+')) return undefined;
  const base = portBase(env);
  if (base === null) throw new ConfigError(`${name}=${raw} is relative to PORT_BASE, which is not set`);
  if (!/^\+\d{1,3}$/.test(raw) || Number(raw.slice(1)) > PORT_BASE_SPAN - 100)
    throw new ConfigError(`${name} must be a port, or +N (0 to ${PORT_BASE_SPAN - 100}) above PORT_BASE, got "${raw}"`);
  return base + Number(raw.slice(1));
}
