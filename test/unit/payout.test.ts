import { expect } from 'chai';
import { nextPayoutStatus, PAYOUT_STATUSES, PAYOUT_TRIGGERS, type PayoutStatus, type PayoutTrigger } from '../../shared/domain/payout';

describe('payout rules', () => {
  describe('state machine: every (status, trigger) pair', () => {
    const expected: Record<PayoutStatus, Record<PayoutTrigger, PayoutStatus | null>> = {
      pending: { sent: 'processing', provider_succeeded: 'succeeded', provider_failed: 'failed' },
      processing: { sent: null, provider_succeeded: 'succeeded', provider_failed: 'failed' },
      succeeded: { sent: null, provider_succeeded: null, provider_failed: null },
      failed: { sent: null, provider_succeeded: null, provider_failed: null },
    };
    for (const from of PAYOUT_STATUSES) {
      for (const trigger of PAYOUT_TRIGGERS) {
        const to = expected[from][trigger];
        it(`${from} + ${trigger} -> ${to ?? 'refused'}`, () => {
          expect(nextPayoutStatus(from, trigger)).to.equal(to);
        });
      }
    }
  });
});
