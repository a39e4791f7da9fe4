import { constants, createPublicKey, privateDecrypt, publicEncrypt, type KeyObject } from 'node:crypto';

/**
 * The disbursement PIN, RSA-encrypted with Airtel's public key and sent base64 in `pin`
 * (https://developers.airtel.africa/documentation, Disbursement API, "Encryption"). The padding
 * follows the key's version: the v1 key (1024 bits) is used with PKCS#1 v1.5, the v2 keys
 * (2048 bits) with OAEP ("RSA/ECB/OAEPWithSHA-256AndMGF1Padding"). Both are configurable.
 * Node 20 still encrypts with PKCS#1 v1.5; it refuses to decrypt it with a private key, which
 * only the simulator does (below, by undoing the padding itself).
 */
export type PinPadding = 'pkcs1' | 'oaep';
export type OaepHash = 'sha256' | 'sha1';

/** A public key as Airtel publishes it: PEM, or the bare base64 of its DER (SubjectPublicKeyInfo). */
export function publicKeyOf(pemOrBase64: string): KeyObject {
  const text = pemOrBase64.trim();
  if (text.startsWith('-----BEGIN')) return createPublicKey(text);
  return createPublicKey({ key: Buffer.from(text.replace(/\s+/g, ''), 'base64'), format: 'der', type: 'spki' });
}

export function encryptPin(pin: string, key: KeyObject, padding: PinPadding, oaepHash: OaepHash = 'sha256'): string {
  const options =
    padding === 'oaep'
      ? { key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash }
      : { key, padding: constants.RSA_PKCS1_PADDING };
  return publicEncrypt(options, Buffer.from(pin, 'utf8')).toString('base64');
}

/**
 * The simulator's side: the PIN back from its base64, or undefined when it does not decrypt.
 * PKCS#1 v1.5 is undone by hand after a raw RSA operation (RFC 8017 §7.2.2: 0x00 0x02, at least
 * 8 non-zero padding bytes, 0x00, the message).
 */
export function decryptPin(
  encrypted: string,
  privateKeyPem: string,
  padding: PinPadding,
  oaepHash: OaepHash = 'sha256',
): string | undefined {
  try {
    const data = Buffer.from(encrypted, 'base64');
    if (padding === 'oaep')
      return privateDecrypt({ key: privateKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash }, data).toString(
        'utf8',
      );
    const em = privateDecrypt({ key: privateKeyPem, padding: constants.RSA_NO_PADDING }, data);
    if (em[0] !== 0x00 || em[1] !== 0x02) return undefined;
    const sep = em.indexOf(0x00, 2);
    if (sep < 10) return undefined;
    return em.subarray(sep + 1).toString('utf8');
  } catch {
    return undefined;
  }
}
