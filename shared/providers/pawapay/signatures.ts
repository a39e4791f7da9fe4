import { createHash, createSign, createVerify, timingSafeEqual, type KeyObject } from 'node:crypto';
import { httpbis } from 'http-message-signatures';

/*
 * structured-headers (RFC 8941) publishes its types only through package "exports", which the
 * production build's node10 resolution (tsconfig.build.json) cannot follow: the four functions used
 * here are typed locally and loaded with require (its CommonJS entry, as http-message-signatures
 * loads it).
 */
type BareItem = number | string | boolean | ArrayBuffer | object;
type Parameters = Map<string, BareItem>;
type Item = [BareItem, Parameters];
type InnerList = [Item[], Parameters];
interface StructuredHeaders {
  parseDictionary: (input: string) => Map<string, Item | InnerList>;
  isInnerList: (value: Item | InnerList) => value is InnerList;
  serializeItem: (item: Item) => string;
  serializeList: (list: (Item | InnerList)[]) => string;
}
const { isInnerList, parseDictionary, serializeItem, serializeList } =
  require('structured-headers') as StructuredHeaders;

/**
 * pawaPay's signed callbacks: RFC 9421 HTTP Message Signatures over the request, with an RFC 9530
 * Content-Digest of the raw body among the signed components
 * (https://docs.pawapay.io/v2/docs/signatures, https://github.com/pawaPay/signatures-node-example).
 * The signature format (Signature-Input, the signature base) is http-message-signatures' and
 * structured-headers' work; this module adds the checks pawaPay's scheme needs: the digest, the
 * digest being signed, the signature's age on the service clock, and ECDSA P-256 signatures in
 * either encoding (DER, as pawaPay's examples produce, or RFC 9421's raw r‖s).
 */

export const SIGNATURE_LABEL = 'sig-pp';
export const SIGNATURE_ALG = 'ecdsa-p256-sha256';
/** The components pawaPay's example signs (signatures-node-example): the digest binds the body. */
export const SIGNED_FIELDS = ['@method', '@authority', '@path', 'signature-date', 'content-digest', 'content-type'];
export type DigestAlgorithm = 'sha-256' | 'sha-512';
const NODE_HASH: Record<DigestAlgorithm, string> = { 'sha-256': 'sha256', 'sha-512': 'sha512' };

export function contentDigest(body: Buffer | string, alg: DigestAlgorithm): string {
  return `${alg}=:${createHash(NODE_HASH[alg]).update(body).digest('base64')}:`;
}

export interface SignOptions {
  privateKey: KeyObject;
  keyId: string;
  /** the URL the message is sent to (its authority and path are signed) */
  url: string;
  method?: string;
  body: Buffer | string;
  contentType?: string;
  digest?: DigestAlgorithm;
  /** DER (pawaPay's examples, the default) or raw r‖s (RFC 9421) */
  encoding?: 'der' | 'raw';
  /** Unix seconds; default now */
  created?: number;
  /** seconds after created; default 60 */
  expiresIn?: number;
  fields?: string[];
}

/** The headers of a signed message: Content-Type, Content-Digest, Signature-Date, Signature-Input, Signature. */
export async function signMessage(opts: SignOptions): Promise<Record<string, string>> {
  const created = opts.created ?? Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = {
    'content-type': opts.contentType ?? 'application/json',
    'content-digest': contentDigest(opts.body, opts.digest ?? 'sha-512'),
    'signature-date': new Date(created * 1000).toISOString(),
  };
  const encoding = opts.encoding ?? 'der';
  const signed = await httpbis.signMessage(
    {
      key: {
        id: opts.keyId,
        alg: SIGNATURE_ALG,
        sign: async (data: Buffer) =>
          createSign('sha256')
            .update(data)
            .sign({ key: opts.privateKey, dsaEncoding: encoding === 'raw' ? 'ieee-p1363' : 'der' }),
      },
      name: SIGNATURE_LABEL,
      fields: opts.fields ?? SIGNED_FIELDS,
      params: ['created', 'expires', 'keyid', 'alg'],
      paramValues: { created: new Date(created * 1000), expires: new Date((created + (opts.expiresIn ?? 60)) * 1000) },
    },
    { method: opts.method ?? 'POST', url: opts.url, headers },
  );
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.headers)) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** ECDSA P-256 over SHA-256, the signature in DER or raw r‖s: the one its length says first, then the other. */
export function verifyEcdsa(key: KeyObject, data: Buffer, signature: Buffer): boolean {
  const order: ('ieee-p1363' | 'der')[] = signature.length === 64 ? ['ieee-p1363', 'der'] : ['der', 'ieee-p1363'];
  for (const dsaEncoding of order) {
    try {
      if (createVerify('sha256').update(data).verify({ key, dsaEncoding }, signature)) return true;
    } catch {
      // not this encoding
    }
  }
  return false;
}

export interface VerifyRequest {
  raw: Buffer;
  headers: Record<string, string | string[] | undefined>;
  method: string;
  /** the URL the sender posted to (its @authority and @path) */
  url: string;
  /** the service clock, Unix seconds */
  nowUnix: number;
  /** how far `created` may be from now, either way (s) */
  maxSkewSec: number;
}

export type KeyLookup = (keyid: string) => Promise<KeyObject | undefined>;

export type VerifyOutcome = { ok: true; keyid: string } | { ok: false; reason: string };

function header(headers: VerifyRequest['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** RFC 9530: every digest we know in Content-Digest matches the body, and there is at least one. */
export function checkContentDigest(raw: Buffer, value: string | undefined): string | null {
  if (!value) return 'no Content-Digest';
  let dict;
  try {
    dict = parseDictionary(value);
  } catch {
    return 'Content-Digest is not a structured dictionary';
  }
  let known = 0;
  for (const [alg, member] of dict) {
    if (alg !== 'sha-256' && alg !== 'sha-512') continue;
    if (isInnerList(member)) return `Content-Digest ${alg} is not a byte sequence`;
    const bytes = member[0];
    if (!(bytes instanceof ArrayBuffer)) return `Content-Digest ${alg} is not a byte sequence`;
    const expected = createHash(NODE_HASH[alg]).update(raw).digest();
    const given = Buffer.from(bytes);
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return `Content-Digest ${alg} does not match the body`;
    known++;
  }
  return known > 0 ? null : 'Content-Digest has no sha-256 or sha-512';
}

/**
 * Verifies a signed message: the digest, then each signature of Signature-Input until one holds
 * (it must cover content-digest, be created within maxSkewSec of now, not be expired, name a
 * known key, and verify).
 */
export async function verifySignedMessage(req: VerifyRequest, lookup: KeyLookup): Promise<VerifyOutcome> {
  const digestProblem = checkContentDigest(req.raw, header(req.headers, 'content-digest'));
  if (digestProblem) return { ok: false, reason: digestProblem };
  const sigHeader = header(req.headers, 'signature');
  const inputHeader = header(req.headers, 'signature-input');
  if (!sigHeader || !inputHeader) return { ok: false, reason: 'no Signature or Signature-Input' };
  let signatures, inputs;
  try {
    signatures = parseDictionary(sigHeader);
    inputs = parseDictionary(inputHeader);
  } catch {
    return { ok: false, reason: 'Signature or Signature-Input is not a structured dictionary' };
  }
  const message = {
    method: req.method,
    url: req.url,
    headers: Object.fromEntries(
      Object.entries(req.headers).filter((e): e is [string, string | string[]] => e[1] !== undefined),
    ),
  };
  let reason = 'no signature';
  for (const [label, member] of inputs) {
    if (!isInnerList(member)) {
      reason = `${label}: not an inner list`;
      continue;
    }
    const input = member;
    const [items, params] = input;
    const components = items.map(([name]) => name);
    if (!components.includes('content-digest')) {
      reason = `${label}: content-digest not signed`;
      continue;
    }
    const created = params.get('created');
    if (typeof created !== 'number' || !Number.isInteger(created)) {
      reason = `${label}: no created time`;
      continue;
    }
    if (Math.abs(req.nowUnix - created) > req.maxSkewSec) {
      reason = `${label}: created ${req.nowUnix - created} s from now`;
      continue;
    }
    const expires = params.get('expires');
    if (expires !== undefined && (typeof expires !== 'number' || req.nowUnix > expires)) {
      reason = `${label}: expired`;
      continue;
    }
    const alg = params.get('alg');
    if (alg !== undefined && alg !== SIGNATURE_ALG) {
      reason = `${label}: algorithm ${JSON.stringify(alg)} not accepted`;
      continue;
    }
    const keyid = params.get('keyid');
    if (typeof keyid !== 'string' || keyid.length === 0) {
      reason = `${label}: no keyid`;
      continue;
    }
    const sig = signatures.get(label);
    if (!sig || !(sig[0] instanceof ArrayBuffer)) {
      reason = `${label}: no signature`;
      continue;
    }
    let base: string;
    try {
      const fields = items.map((item) => serializeItem(item));
      const parts = httpbis.createSignatureBase({ fields }, message);
      parts.push(['"@signature-params"', [serializeList([input])]]);
      base = httpbis.formatSignatureBase(parts);
    } catch (err) {
      reason = `${label}: ${(err as Error).message}`;
      continue;
    }
    const key = await lookup(keyid);
    if (!key) {
      reason = `${label}: unknown keyid`;
      continue;
    }
    if (verifyEcdsa(key, Buffer.from(base), Buffer.from(sig[0]))) return { ok: true, keyid };
    reason = `${label}: signature does not verify`;
  }
  return { ok: false, reason };
}
