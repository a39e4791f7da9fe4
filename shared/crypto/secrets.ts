import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SecretsKey } from '../config';

/**
 * Merchant secrets at rest: AES-256-GCM under SECRETS_KEY. The key id is stored beside the
 * ciphertext so an older key can still decrypt after rotation. API keys are stored only as a
 * SHA-256 hash (they carry 256 bits of randomness, so a plain hash is enough to look them up).
 */

export interface Encrypted {
  keyId: string;
  /** base64 of iv (12 bytes) | tag (16 bytes) | ciphertext */
  ciphertext: string;
}

export function encryptSecret(plaintext: string, keys: SecretsKey[]): Encrypted {
  const { id, key } = keys[0];
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(id));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { keyId: id, ciphertext: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64') };
}

export function decryptSecret(enc: Encrypted, keys: SecretsKey[]): string {
  const found = keys.find((k) => k.id === enc.keyId);
  if (!found) throw new Error(`no secrets key with id ${enc.keyId}`);
  const raw = Buffer.from(enc.ciphertext, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', found.key, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(found.id));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/** URL-safe random text of `bytes` bytes of entropy. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

export function hmacHex(key: string, payload: string | Buffer): string {
  return createHmac('sha256', key).update(payload).digest('hex');
}

/** Constant-time string comparison that never throws on a length mismatch. */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
