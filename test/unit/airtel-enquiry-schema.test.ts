import { expect } from 'chai';
import { check } from '../../shared/providers/airtel/schema';

/** The enquiry answer's schema: airtel_money_id may be null while Airtel has not posted the transaction. */
describe('airtel enquiry answer schema', () => {
  const answer = (status: string, airtelMoneyId: unknown) => ({
    data: { transaction: { id: 'P0123', airtel_money_id: airtelMoneyId, message: 'x', status } },
    status: { code: '200', message: 'SUCCESS', result_code: 'ESB000010', success: true },
  });

  it('takes airtel_money_id null while pending (TIP), ambiguous (TA) or failed (TF, TE)', () => {
    for (const status of ['TIP', 'TA', 'TF', 'TE'])
      expect(check('enquiryResponse', answer(status, null))).to.deep.equal([]);
  });

  it('requires a success (TS) to name its airtel_money_id as a string when it carries one', () => {
    expect(check('enquiryResponse', answer('TS', 'MP240101.1200.L00001'))).to.deep.equal([]);
    expect(check('enquiryResponse', answer('TS', null))).to.not.deep.equal([]);
    expect(check('enquiryResponse', answer('TA', 42))).to.not.deep.equal([]);
  });
});
