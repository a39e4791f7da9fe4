import { expect } from 'chai';
import { Readable } from 'node:stream';
import { mpgsReportParser } from '../../shared/providers/mpgs/report';
import { ReportError, type StatementLineIn } from '../../shared/providers/report';

const PAY = 'pay_0f8fad5b-d9cb-469f-a165-70867728950e';
const RE = 're_7c9e6679-7425-40de-944b-e07fc1f90ae7';
const HEADER = 'Merchant ID,Order ID,Transaction ID,Transaction Type,Result,Response Code,Amount,Currency,Date';

async function read(text: string): Promise<{ lines: StatementLineIn[]; currency: string | null }> {
  // two chunks: a row split across chunks must read as one
  const half = Math.floor(text.length / 2);
  const parsed = mpgsReportParser.parse(
    Readable.from([Buffer.from(text.slice(0, half)), Buffer.from(text.slice(half))]),
  );
  const lines: StatementLineIn[] = [];
  for await (const l of parsed.lines) lines.push(l);
  return { lines, currency: parsed.summary().currency };
}

async function refusal(text: string): Promise<ReportError> {
  try {
    await read(text);
  } catch (e) {
    expect(e).to.be.instanceOf(ReportError);
    return e as ReportError;
  }
  throw new Error('the report was accepted');
}

describe('mpgs transaction report parser', () => {
  const good = [
    HEADER,
    `TESTDRC01,${PAY},auth-1,AUTHENTICATION,SUCCESS,,25.00,USD,2026-11-27 09:00:01`,
    `TESTDRC01,${PAY},pay-1,PAYMENT,SUCCESS,APPROVED,25.00,USD,2026-11-27T09:00:05.000Z`,
    `TESTDRC01,${PAY},${RE},REFUND,SUCCESS,APPROVED,"10.50",USD,2026-11-27 15:30:00`,
    `TESTDRC01,pay_other,pay-1,PAYMENT,FAILURE,DECLINED,1000,CDF,2026-11-27 10:00:00`,
    `TESTDRC01,shop-9,1,PAYMENT,SUCCESS,APPROVED,3.00,USD,2026-11-27 11:00:00`,
    `TESTDRC01,${PAY},void-pay-1,VOID_PAYMENT,SUCCESS,APPROVED,25.00,USD,2026-11-28T00:10:00+01:00`,
  ].join('\r\n');

  it('reads payments, refunds and voids by column name, skipping what moves no money', async () => {
    const { lines, currency } = await read(`${good}\r\n`);
    expect(currency).to.equal('USD');
    expect(lines.map((l) => [l.lineNo, l.kind, l.status, l.amount, l.currency, l.ourId, l.providerRef])).to.deep.equal([
      [3, 'collection', 'completed', 2500, 'USD', PAY, PAY],
      [4, 'refund', 'completed', 1050, 'USD', RE, `${PAY}/${RE}`],
      [5, 'collection', 'failed', 100000, 'CDF', 'pay_other', 'pay_other'],
      [6, 'collection', 'completed', 300, 'USD', null, 'shop-9'],
      [7, 'reversal', 'completed', 2500, 'USD', PAY, PAY],
    ]);
    expect(lines[0].occurredAt.toISOString()).to.equal('2026-11-27T09:00:05.000Z');
    expect(lines[1].occurredAt.toISOString()).to.equal('2026-11-27T15:30:00.000Z');
    expect(lines[4].occurredAt.toISOString()).to.equal('2026-11-27T23:10:00.000Z');
    expect(lines.every((l) => l.fee === 0)).to.equal(true);
    expect(lines[0].raw['Response Code']).to.equal('APPROVED');
  });

  it('reads the Reporting API field names as headers too', async () => {
    const { lines } = await read(
      'order.id,transaction.id,transaction.type,result,transaction.amount,transaction.currency,timeOfRecord\n' +
        `${PAY},pay-1,PAYMENT,SUCCESS,25.00,USD,2026-11-27T09:00:05.000Z\n`,
    );
    expect(lines).to.have.length(1);
    expect(lines[0].ourId).to.equal(PAY);
  });

  it('refuses a malformed file, naming the line', async () => {
    expect((await refusal('Order ID,Amount\n1,2\n')).message).to.match(/header lacks the column\(s\) Transaction ID/);
    expect(
      (await refusal(`${HEADER}\nTESTDRC01,${PAY},pay-1,PAYMENT,SUCCESS,,25.00,EUR,2026-11-27 09:00:05\n`)).lineNo,
    ).to.equal(2);
    expect(
      (await refusal(`${HEADER}\nTESTDRC01,${PAY},pay-1,PAYMENT,SUCCESS,,25.001,USD,2026-11-27 09:00:05\n`)).message,
    ).to.match(/line 2: amount "25.001"/);
    expect(
      (await refusal(`${HEADER}\nTESTDRC01,${PAY},pay-1,CAPTURED,SUCCESS,,25.00,USD,2026-11-27 09:00:05\n`)).message,
    ).to.match(/type "CAPTURED"/);
    expect(
      (await refusal(`${HEADER}\nTESTDRC01,${PAY},pay-1,PAYMENT,MAYBE,,25.00,USD,2026-11-27 09:00:05\n`)).message,
    ).to.match(/result "MAYBE"/);
    expect(
      (await refusal(`${HEADER}\nTESTDRC01,${PAY},pay-1,PAYMENT,SUCCESS,,25.00,USD,yesterday\n`)).message,
    ).to.match(/"yesterday" is not a date/);
    expect((await refusal('')).message).to.match(/empty/);
  });

  it('refuses a truncated file: cut inside a row, inside a quote, or before the final line break', async () => {
    const cut = good.slice(0, good.lastIndexOf(',USD'));
    expect((await refusal(cut)).message).to.match(/line 7: .*fields where the header has 9 \(truncated\?\)/);
    expect((await refusal(`${HEADER}\nTESTDRC01,${PAY},pay-1,PAYMENT,SUCCESS,,"25.0`)).message).to.match(/./);
    expect((await refusal(good)).message).to.match(/does not end with a line break \(truncated\)/);
  });
});
