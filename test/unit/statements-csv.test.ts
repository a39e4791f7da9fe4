import { expect } from 'chai';
import { csvField } from '../../shared/statements/csv';

describe('CSV fields of the transactions export', () => {
  it('quotes commas, quotes and line breaks, and defuses spreadsheet formulas in text', () => {
    expect(csvField('order-42')).to.equal('order-42');
    expect(csvField('a,b')).to.equal('"a,b"');
    expect(csvField('say "hi"')).to.equal('"say ""hi"""');
    expect(csvField('line\nbreak')).to.equal('"line\nbreak"');
    expect(csvField('=SUM(A1)')).to.equal("'=SUM(A1)");
    expect(csvField('+1')).to.equal("'+1");
    expect(csvField('@x,y')).to.equal(`"'@x,y"`);
    expect(csvField(-1000)).to.equal('-1000');
    expect(csvField(null)).to.equal('');
  });
});
