import { expect } from 'chai';
import {
  DELIVERY_COLUMNS,
  deliveryRecords,
  deliveryRows,
  insertDeliveriesSql,
  subscribedEndpoints,
} from '../../shared/webhooks/fanout';

/** shared/webhooks/fanout.ts: the one insert into webhook_deliveries, and who receives an event. */

const columnsOf = (recordset: string) => recordset.split(',').map((c) => c.trim().split(/\s+/)[0]);

describe('the deliveries part (shared/webhooks/fanout.ts)', () => {
  it('joins each delivery to its event, and takes the event id and created from it', () => {
    const sql = insertDeliveriesSql('$4', 'ev');
    expect(sql).to.match(/^insert into webhook_deliveries \(id, event_id, webhook_id, created, redelivery\)/);
    expect(sql).to.contain('select x.id, ev.id, x.webhook_id, ev.created, 0 from json_to_recordset($4::json)');
    expect(sql).to.match(/join ev on ev\.object_id = x\.object_id$/);
  });

  it('names the events relation and the round it is given', () => {
    const sql = insertDeliveriesSql('$2', 'events_now', '$3::int');
    expect(sql).to.contain('events_now.id, x.webhook_id, events_now.created, $3::int from json_to_recordset($2::json)');
    expect(sql).to.contain('join events_now on events_now.object_id = x.object_id');
  });

  it('has the records and their recordset columns agree', () => {
    const rows = deliveryRows({ id: 'evt_1' }, ['wh_1', 'wh_2'], 1_700_000_000);
    expect(rows.map((r) => [r.webhook_id, r.redelivery, r.created])).to.deep.equal([
      ['wh_1', 0, 1_700_000_000],
      ['wh_2', 0, 1_700_000_000],
    ]);
    const records = deliveryRecords('pay_1', rows);
    for (const r of records) expect(Object.keys(r).sort()).to.deep.equal([...columnsOf(DELIVERY_COLUMNS)].sort());
    expect(records.map((r) => r.object_id)).to.deep.equal(['pay_1', 'pay_1']);
  });

  it('sends an event to the enabled endpoints that subscribe to it, never webhook.test', () => {
    const endpoints = [
      { id: 'wh_all', events: ['*'] },
      { id: 'wh_pay', events: ['payment.*'] },
      { id: 'wh_ref', events: ['refund.succeeded'] },
    ];
    expect(subscribedEndpoints(endpoints, 'payment.succeeded')).to.deep.equal(['wh_all', 'wh_pay']);
    expect(subscribedEndpoints(endpoints, 'webhook.test')).to.deep.equal([]);
  });
});
