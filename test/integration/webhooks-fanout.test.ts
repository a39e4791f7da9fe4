import { expect } from 'chai';
import type { Db } from '../../shared/db/knex';
import { runSql, sqlStatement } from '../../shared/db/sql/run';
import type { OutboxWriter } from '../../shared/db/transact';
import { eventEnvelope } from '../../shared/events/read';
import { deliveryRecords, emitEvent, insertDeliveries, insertDeliveriesSql } from '../../shared/webhooks/fanout';
import { ownDatabase } from '../helpers/own-database';

/**
 * shared/webhooks/fanout.ts and shared/events/record.ts on a real database: an event and its
 * deliveries written outside the kernel go through the same parts as the writer's, and a delivery
 * is written only with its event.
 */
describe('the events and deliveries parts, on Postgres', () => {
  let db: Db;
  ownDatabase((d) => (db = d));
  const jobs: unknown[] = [];
  const outbox: OutboxWriter = {
    async add(queue, jobName, payload, delayMs = 0) {
      jobs.push({ queue, jobName, payload });
      return { id: 'x', queue, job_name: jobName, payload, delay_ms: delayMs, traceparent: null };
    },
    written() {},
  };

  before(async () => {
    await db('merchants').insert({ id: 'mer_fan', name: 'Fan-out', fees: {} });
    await db('webhooks').insert([
      { id: 'wh_pay', merchant_id: 'mer_fan', environment: 'test', url: 'https://a.example', events: ['payment.*'] },
      { id: 'wh_ref', merchant_id: 'mer_fan', environment: 'test', url: 'https://b.example', events: ['refund.*'] },
    ]);
  });

  it('emits an event with one delivery per subscribed endpoint, created with the event, and its job', async () => {
    const event = await db.transaction((trx) =>
      emitEvent(trx, outbox, {
        merchantId: 'mer_fan',
        environment: 'test',
        type: 'payment.succeeded',
        objectId: 'pay_fan',
        objectVersion: 2,
        object: { id: 'pay_fan', amount: 2n ** 60n },
        at: 1_700_000_000_900,
      }),
    );
    const stored = await db('events').where({ id: event.id }).first();
    expect(stored).to.include({ object_id: 'pay_fan', object_version: 2, type: 'payment.succeeded' });
    expect(Number(stored.created)).to.equal(1_700_000_000);
    expect(eventEnvelope(stored)).to.deep.equal(eventEnvelope({ ...event, body: stored.body }));
    const deliveries = await db('webhook_deliveries').where({ event_id: event.id }).select();
    expect(deliveries.map((d) => [d.webhook_id, Number(d.created), d.redelivery])).to.deep.equal([
      ['wh_pay', 1_700_000_000, 0],
    ]);
    expect(jobs).to.have.length(1);

    // a redelivery round: its own instant and round number, through the same insert
    const again = await db.transaction((trx) => insertDeliveries(trx, outbox, event, ['wh_pay'], 2, 1_700_000_500));
    const row = await db('webhook_deliveries').where({ id: again[0].id }).first();
    expect([row.event_id, Number(row.created), row.redelivery]).to.deep.equal([event.id, 1_700_000_500, 2]);
  });

  it('writes no delivery whose event is not among the events it is joined to', async () => {
    const only = sqlStatement(
      'webhooks-fanout-test-deliveries',
      `with ev as (select * from json_to_recordset($1::json) as ev(id text, object_id text, created bigint))
       ${insertDeliveriesSql('$2', 'ev')} returning id`,
    );
    const [event] = await db('events').where({ object_id: 'pay_fan' }).select('id');
    const written = await runSql<{ id: string }>(db, only, [
      JSON.stringify([{ id: event.id, object_id: 'pay_fan', created: 1 }]),
      JSON.stringify([
        ...deliveryRecords('pay_fan', [{ id: 'del_joined', webhook_id: 'wh_ref' }]),
        ...deliveryRecords('pay_other', [{ id: 'del_alone', webhook_id: 'wh_pay' }]),
      ]),
    ]);
    expect(written.map((r) => r.id)).to.deep.equal(['del_joined']);
  });
});
