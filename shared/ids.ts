import { randomBytes, randomUUID } from 'node:crypto';

/** Object id prefixes of docs/decisions.md#names; every id is the prefix followed by a UUID v4. */
export const ID_PREFIX = {
  payment: 'pay_',
  refund: 're_',
  payout: 'po_',
  settlement: 'stl_',
  event: 'evt_',
  delivery: 'whd_',
  webhook: 'wh_',
  merchant: 'mer_',
  credential: 'cred_',
  webhookSecret: 'whs_',
  paymentLink: 'plink_',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

const UUID_V4 = '[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}';
export const UUID_V4_RE = new RegExp(`^${UUID_V4}$`, 'i');

export function newId(kind: IdKind): string {
  return ID_PREFIX[kind] + randomUUID();
}

/** True when `id` is `<prefix of kind><uuid v4>`; lets routes answer 404 without a query. */
export function isId(kind: IdKind, id: string): boolean {
  const prefix = ID_PREFIX[kind];
  return id.startsWith(prefix) && UUID_V4_RE.test(id.slice(prefix.length)) && id === id.toLowerCase();
}

/** Event id of docs/decisions.md#names: `evt_<object uuid>_<unix seconds>_<short random>`. */
export function newEventId(objectId: string, createdUnix: number): string {
  const uuid = objectId.slice(objectId.indexOf('_') + 1);
  return `evt_${uuid}_${createdUnix}_${randomBytes(4).toString('hex')}`;
}

/** Unix seconds of a stored instant (null stays null). */
export const unixOf = (d: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);
