import { expect } from 'chai';
import { EVENT_COLUMNS, eventRecord, insertEventsSql, newEventRow } from '../../shared/events/record';

/** shared/events/record.ts: the one insert into events, and the one shape of an event's row. */

const columnsOf = (recordset: string) => recordset.split(',').map((c) => c.trim().split(/\s+/)[0]);
const anEvent = () =>
  newEventRow({
    merchantId: 'mer_1',
    environment: 'test',
    type: 'payment.succeeded',
    objectId: 'pay_1',
    objectVersion: 3,
    object: { id: 'pay_1', amount: 2n ** 60n },
    at: 1_700_000_000_500,
  });

describe('the events part (shared/events/record.ts)', () => {
  it('reads every column of an event record from its source, and stores the body as jsonb', () => {
    const sql = insertEventsSql('ev');
    expect(sql).to.match(
      /^insert into events \(id, merchant_id, environment, type, object_id, object_version, created, body\)/,
    );
    expect(sql).to.match(
      /select id, merchant_id, environment, type, object_id, object_version, created, body::jsonb from ev$/,
    );
    // nothing from Postgres (now(), defaults): every value is the row's, so the paths agree
    expect(sql).not.to.match(/now\(\)|default/);
  });

  it('has the record and its recordset columns agree (the writer joins on object_id, first)', () => {
    const record = eventRecord(anEvent());
    expect(columnsOf(EVENT_COLUMNS)[0]).to.equal('object_id');
    expect([...columnsOf(EVENT_COLUMNS)].sort()).to.deep.equal(Object.keys(record).sort());
  });

  it('builds the record from newEventRow, its body in exact stored form', () => {
    const row = anEvent();
    const record = eventRecord(row);
    expect(record).to.include({ id: row.id, object_id: 'pay_1', object_version: 3, created: 1_700_000_000 });
    expect(record.body).to.be.a('string');
    expect(record.body).to.contain('"amount":1152921504606846976');
  });
});
