import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { UnrecoverableError } from 'bullmq';
import { guardCallbackJob } from '../../workers/callback-reconciler/job';
import { CALLBACKS_PER_JOB } from '../../shared/providers/inbox';

/** A callback-reconciler job names one stored callback or several of one kind, by inbox id only. */
describe('callback-reconciler job payload', () => {
  it('a lone callback (callbackId) or callbacks stored together (callbackIds, comma-separated)', () => {
    const [a, b] = [randomUUID(), randomUUID()];
    expect(guardCallbackJob({ callbackId: a, kind: 'payment', requestId: 'req_1' })).to.deep.equal({
      callbackIds: [a],
      kind: 'payment',
      requestId: 'req_1',
    });
    expect(guardCallbackJob({ callbackIds: `${a},${b}`, kind: 'refund' })).to.deep.equal({
      callbackIds: [a, b],
      kind: 'refund',
      requestId: undefined,
    });
    // an unknown kind is no hint: the general path decides
    expect(guardCallbackJob({ callbackId: a, kind: 'nope' }).kind).to.equal(undefined);
  });

  it('refuses, for good, a payload that names no callback, both forms, a malformed id, an id twice or too many', () => {
    const a = randomUUID();
    const bad: unknown[] = [
      null,
      {},
      { callbackId: 42 },
      { callbackId: 'not-a-uuid' },
      { callbackIds: '' },
      { callbackIds: `${a},` },
      { callbackIds: `${a},${a}` },
      { callbackId: a, callbackIds: a },
      { callbackIds: Array.from({ length: CALLBACKS_PER_JOB + 1 }, () => randomUUID()).join(',') },
    ];
    for (const data of bad) expect(() => guardCallbackJob(data), JSON.stringify(data)).to.throw(UnrecoverableError);
  });
});
