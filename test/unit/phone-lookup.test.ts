import { expect } from 'chai';
import { lookupPhoneNumber, PhoneNumberProblem } from '../../shared/msisdn';

/** The number lookup of docs/decisions.md#integrators-kit: normalisation and the prefix table. */
describe('phone number lookup', () => {
  const accepted: [string, string, string][] = [
    ['+243 81 234 5678', '243812345678', 'vodacom'],
    ['0812345678', '243812345678', 'vodacom'],
    ['243812345678', '243812345678', 'vodacom'],
    ['00243 82-123-4567', '243821234567', 'vodacom'],
    ['(0)83.123.45.67', '243831234567', 'vodacom'],
    ['+243 (97) 123 4567', '243971234567', 'airtel'],
    ['098 123 4567', '243981234567', 'airtel'],
    ['243990000001', '243990000001', 'airtel'],
    ['+243800000000', '243800000000', 'orange'],
    ['0841234567', '243841234567', 'orange'],
    ['0851234567', '243851234567', 'orange'],
    ['0891234567', '243891234567', 'orange'],
    ['0901234567', '243901234567', 'africell'],
    ['+243 91 123 45 67', '243911234567', 'africell'],
    ['\t0812345678 ', '243812345678', 'vodacom'],
  ];
  for (const [input, msisdn, operator] of accepted) {
    it(`${JSON.stringify(input)} → ${msisdn} (${operator})`, () => {
      expect(lookupPhoneNumber(input)).to.deep.equal({ msisdn, operator });
    });
  }

  const refused: [string, RegExp][] = [
    ['0812345abc', /only digits/],
    ['+243 81 234 567O', /only digits/],
    ['tel:0812345678', /only digits/],
    ['81+2345678', /only digits/],
    ['081234567', /9 digits.*got 8/],
    ['08123456789', /9 digits.*got 10/],
    ['24381234567', /9 digits.*got 8/],
    ['+2438123456789', /9 digits.*got 10/],
    ['812345678', /must start with/],
    ['+33612345678', /must start with/],
    ['+0812345678', /must start with/],
    ['0701234567', /prefix 70/],
    ['243861234567', /prefix 86/],
    ['0', /9 digits.*got 0/],
    ['+', /only digits/],
    ['0'.repeat(33), /at most 32/],
  ];
  for (const [input, reason] of refused) {
    it(`refuses ${JSON.stringify(input)}`, () => {
      expect(() => lookupPhoneNumber(input)).to.throw(PhoneNumberProblem, reason);
    });
  }
});
