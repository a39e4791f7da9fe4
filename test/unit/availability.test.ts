import { expect } from 'chai';
import { isDelayed } from '../../shared/availability/read';

/** The `delayed` threshold of operator availability (AvailabilityConfig). */
describe('operator availability threshold', () => {
  it('is delayed when at least minCalls calls were made and half or more failed or were slow', () => {
    const table: [{ calls: number; bad: number } | undefined, number, boolean][] = [
      [undefined, 3, false],
      [{ calls: 2, bad: 2 }, 3, false],
      [{ calls: 3, bad: 1 }, 3, false],
      [{ calls: 3, bad: 2 }, 3, true],
      [{ calls: 4, bad: 2 }, 3, true],
      [{ calls: 5, bad: 2 }, 3, false],
      [{ calls: 1000, bad: 499 }, 3, false],
      [{ calls: 1, bad: 1 }, 1, true],
    ];
    for (const [recent, minCalls, delayed] of table)
      expect(isDelayed(recent, minCalls), JSON.stringify(recent)).to.equal(delayed);
  });
});
