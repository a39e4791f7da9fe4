import type { Middleware } from 'koa';
import type { ServiceContext } from '../../shared/context';
import { hashApiKey, hmacHex } from '../../shared/crypto/secrets';
import { credentialUsable, findCredentialForAuth, type CredentialForAuth } from '../../shared/merchants/auth';
import { TtlCache } from '../../shared/ttlCache';
import { unauthorized } from './unauthorized';

const BEARER = /^Bearer +(\S+) *$/i;
const API_KEY = /^svc_(test|live)_[A-Za-z0-9_-]{1,256}$/;
const DECOY_SECRET = 'sk_decoy-secret-for-refused-keys';

/**
 * A refused key costs about what an accepted one does before its signature is checked (a hash,
 * a lookup, an HMAC), so the time taken says little more than the code already does.
 */
function decoyWork(method: string, path: string): void {
  hmacHex(DECOY_SECRET, `0.${method}.${path}.`);
}

/**
 * Steps 2 and 3 of the pipeline (docs/decisions.md#merchant-pipeline): no bearer header → 401 auth-required; a key unknown by its
 * SHA-256, past its end (a revoked key works until its grace ends) or of the other environment
 * → 401 api-key-invalid. Fills ctx.state.auth. Credentials, unknown hashes too, are cached by
 * hash for CREDENTIAL_CACHE_MS: revocation and suspension reach every process within that time.
 * The decrypted secret sits there, in memory only.
 */
export function bearer({ db, config, clock }: ServiceContext): Middleware {
  const credentials = new TtlCache<CredentialForAuth | null>(config.credentialCacheMs, undefined, clock);
  return async (ctx, next) => {
    const header = BEARER.exec(ctx.get('Authorization'));
    if (!header) {
      hashApiKey('');
      decoyWork(ctx.method, ctx.path);
      throw unauthorized('auth-required');
    }
    const token = header[1];
    const hash = hashApiKey(token);
    const shape = API_KEY.exec(token);
    const found = shape ? await credentials.get(hash, () => findCredentialForAuth(db, hash, config.secretsKeys)) : null;
    if (!found || found.environment !== shape![1] || !credentialUsable(found, clock.now())) {
      decoyWork(ctx.method, ctx.path);
      throw unauthorized('api-key-invalid');
    }
    // the request's own copy (never the cached object), without the end checked above
    const { expiresAtMs: _expiresAtMs, ...auth } = found;
    ctx.state.auth = auth;
    return next();
  };
}
