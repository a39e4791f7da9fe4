import { systemClock, type Clock } from './clock';

/**
 * Values kept in this process for `ttlMs` (0: nothing kept), by key, for the request path's
 * lookups (credentials, merchant terms): a change in Postgres reaches every process within that
 * time. Concurrent misses on one key share one load; a failed load is not remembered; beyond
 * `maxEntries` the least recently loaded key goes. Time is the service context's clock.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { at: number; value: Promise<V> }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
    private readonly clock: Clock = systemClock,
  ) {}

  get(key: string, load: () => Promise<V>): Promise<V> {
    const now = this.clock.now();
    const hit = this.entries.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const value = load();
    if (this.ttlMs > 0) {
      const entry = { at: now, value };
      this.entries.delete(key); // re-insert at the end: Map order is the eviction order
      this.entries.set(key, entry);
      if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      value.catch(() => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
      });
    }
    return value;
  }

  /** Keeps `value` for `key` from now on (the process that changed it sees the change at once). */
  set(key: string, value: Promise<V>): void {
    this.entries.delete(key);
    this.entries.set(key, { at: this.clock.now(), value });
  }
}

/** The caches of a service context by name: each module names its own, with its TTL. */
export class Caches {
  private readonly named = new Map<string, TtlCache<unknown>>();

  constructor(private readonly clock: Clock) {}

  /** The cache `name`, built on first use with its TTL (Infinity: kept for the life of the process) and its size. */
  ttl<V>(name: string, ttlMs: number, maxEntries?: number): TtlCache<V> {
    let c = this.named.get(name) as TtlCache<V> | undefined;
    if (!c) this.named.set(name, (c = new TtlCache<V>(ttlMs, maxEntries, this.clock)));
    return c;
  }
}
