/**
 * Airtel's OAuth2 client-credentials token, cached per connector instance (so per process):
 * fetched once, shared by every caller, refreshed a margin before it expires, and one refresh
 * in flight at a time however many callers want it (stack-notes "Connectors"). Reference:
 * https://developers.airtel.africa/documentation (Authorization, POST /auth/oauth2/token:
 * `expires_in` is typed string in the reference, "180" in its example; a number is read too).
 */

export interface Token {
  accessToken: string;
  /** when to fetch a new one (ms, the connector's clock) */
  refreshAt: number;
  /** when Airtel says it expires (ms) */
  expiresAt: number;
}

/**
 * Seconds from `expires_in` ("180" or 180); undefined when it is not a positive number.
 */
export function expiresInSeconds(value: unknown): number | undefined {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value)
        ? Number(value)
        : NaN;
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/**
 * When a token obtained at `obtainedAt` (ms) and living `lifetimeS` seconds is refreshed:
 * `marginMs` before it expires, but never in the first half of its life (a short-lived token
 * is not refetched on every call).
 */
export function refreshAtOf(obtainedAt: number, lifetimeS: number, marginMs: number): number {
  const lifetimeMs = lifetimeS * 1000;
  return obtainedAt + Math.max(lifetimeMs - marginMs, lifetimeMs / 2);
}

export class TokenCache {
  private token: Token | undefined;
  private inFlight: Promise<Token> | undefined;

  constructor(
    private readonly fetchToken: () => Promise<{ accessToken: string; expiresInS: number }>,
    private readonly now: () => number,
    private readonly marginMs: number,
  ) {}

  /** A token fresh enough to use: the cached one, or the one being fetched (shared), or a new one. */
  async get(): Promise<string> {
    const t = this.token;
    if (t && this.now() < t.refreshAt) return t.accessToken;
    return (await this.refresh()).accessToken;
  }

  /**
   * Forgets `rejected` (a token the API refused with 401) and fetches another; a token already
   * replaced by a concurrent caller is not thrown away again, so one 401 burst costs one refresh.
   */
  async replace(rejected: string): Promise<string> {
    if (this.token && this.token.accessToken !== rejected) return this.token.accessToken;
    if (this.token?.accessToken === rejected) this.token = undefined;
    return (await this.refresh()).accessToken;
  }

  private refresh(): Promise<Token> {
    if (!this.inFlight) {
      const started = this.now();
      this.inFlight = this.fetchToken()
        .then(({ accessToken, expiresInS }) => {
          const token = {
            accessToken,
            refreshAt: refreshAtOf(started, expiresInS, this.marginMs),
            expiresAt: started + expiresInS * 1000,
          };
          this.token = token;
          return token;
        })
        .finally(() => {
          this.inFlight = undefined;
        });
    }
    return this.inFlight;
  }

  clear(): void {
    this.token = undefined;
  }
}
