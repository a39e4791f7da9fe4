import { randomInt, randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Knex } from 'knex';
import { signRequest, type ClientResponse, type ServiceClient } from '../shared/client/signing';
import { TIMESTAMP_TOLERANCE_S } from '../api/pipeline/signed';
import { sleep } from './lib/processes';

/**
 * The chaos drill's replays of signed requests (docs/decisions.md#replayed-signed-requests): an
 * accepted signed POST sent again, byte for byte with its X-Timestamp and X-Signature, within the
 * tolerance, must be refused with 409 `request-replayed` and create nothing when it carries a new
 * Idempotency-Key or none (on a route whose key is required, none is refused before the
 * signature is looked at: 400 `idempotency-key-required`), and get its first answer again when it
 * carries the key of its first use.
 */

/** A refusal of a replay: the replay's own code, or the missing required key's. */
const refusedReplay = (res: ClientResponse | undefined, key: string | null) =>
  (res?.status === 409 && res.body?.error?.code === 'request-replayed') ||
  (key === null && res?.status === 400 && res.body?.error?.code === 'idempotency-key-required');

/** The row a request creates, found by the unique field the drill gave it. */
export interface Identity {
  table: 'payments' | 'refunds' | 'payouts';
  column: 'reference' | 'reason';
  value: string;
}

export async function countOf(db: Knex, identity: Identity): Promise<number> {
  const [{ n }] = await db(identity.table).where(identity.column, identity.value).count<{ n: string }[]>('* as n');
  return Number(n);
}

/** A signed POST as it was sent and accepted: the same path, bytes and timestamp make the same X-Signature. */
export interface SentPost {
  path: string;
  raw: string;
  timestamp: number;
  key: string;
  identity: Identity;
  answer: ClientResponse;
}

/** Signs and sends the drill's POSTs, remembering every X-Signature it sent (the log scan looks for them). */
export class SignedPoster {
  readonly signatures = new Set<string>();

  constructor(private readonly client: ServiceClient) {}

  /** POSTs `raw` signed at `timestamp` (Unix seconds), with Idempotency-Key `key` or none. */
  post(
    path: string,
    raw: string,
    key: string | null,
    timestamp = Math.floor(Date.now() / 1000),
  ): Promise<ClientResponse> {
    this.signatures.add(signRequest(this.client.opts.secret, String(timestamp), 'POST', path, raw));
    return this.client.post(path, raw, { timestamp, idempotencyKey: key ?? false });
  }
}

export interface ReplayTally {
  /** replays with a new key or none */
  tried: number;
  /** of those, refused (409 request-replayed; without a required key, 400 idempotency-key-required) */
  refused: number;
  /** rows beyond the one the first use created */
  acted: number;
  /** replays with the key of the first use, and how many got the first answer again */
  sameKey: number;
  sameKeyAnswered: number;
  /** every other answer, by which replay it was and its status and code */
  otherAnswers: Map<string, number>;
}

/** `read`, tried again every second for up to a minute while it fails. */
async function readRetried<T>(read: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await read();
    } catch (err) {
      if (i >= 60) throw err;
      await sleep(1000);
    }
  }
}

export class Replays {
  readonly tally: ReplayTally = {
    tried: 0,
    refused: 0,
    acted: 0,
    sameKey: 0,
    sameKeyAnswered: 0,
    otherAnswers: new Map(),
  };

  constructor(
    private readonly poster: SignedPoster,
    private readonly db: Knex,
  ) {}

  /** A few seconds after its first use, sends `sent` again with a new key, with none, then with its own key. */
  async replay(sent: SentPost): Promise<void> {
    await sleep(randomInt(2000, 10_000));
    for (const [label, key] of [
      ['new key', randomUUID()],
      ['no key', null],
    ] as const) {
      this.tally.tried++;
      const res = await this.answer(sent, key);
      if (refusedReplay(res, key)) this.tally.refused++;
      else this.other(label, res);
    }
    // read again while Postgres fails over (the HA drill's leader changes reach this connection too)
    this.tally.acted += Math.max(0, (await readRetried(() => countOf(this.db, sent.identity))) - 1);
    this.tally.sameKey++;
    const again = await this.answer(sent, sent.key);
    if (again?.status === sent.answer.status && isDeepStrictEqual(again.body, sent.answer.body))
      this.tally.sameKeyAnswered++;
    else this.other('same key', again);
  }

  /** The answer to `sent` sent again with `key`, asked again (the same bytes) after a 5xx or a network error while its timestamp is fresh. */
  private async answer(sent: SentPost, key: string | null): Promise<ClientResponse | undefined> {
    const freshUntil = (sent.timestamp + TIMESTAMP_TOLERANCE_S - 20) * 1000;
    while (Date.now() < freshUntil) {
      const res = await this.poster.post(sent.path, sent.raw, key, sent.timestamp).catch(() => undefined);
      if (res && res.status < 500) return res;
      await sleep(1000);
    }
    return undefined;
  }

  private other(label: string, res: ClientResponse | undefined): void {
    const what = `${label}: ${res ? `${res.status} ${res.body?.error?.code ?? ''}`.trim() : 'no answer'}`;
    this.tally.otherAnswers.set(what, (this.tally.otherAnswers.get(what) ?? 0) + 1);
  }
}
