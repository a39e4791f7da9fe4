import type { Db } from './db/knex';

/** Idempotency keys live 24 hours (spec 8); expired ones are purged by the outbox-relay pool. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;

export async function purgeExpiredIdempotencyKeys(db: Db): Promise<number> {
  return db('idempotency_keys').where('expires_at', '<', db.fn.now()).del();
}
