import { expect } from 'chai';
import { Writable } from 'node:stream';
import { createLogger, maskPath, maskText, type Logger } from '../../shared/logger';

function capture(fn: (log: Logger) => void): string {
  const chunks: string[] = [];
  const memory = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  fn(createLogger('info', 'test', memory));
  return chunks.join('');
}

describe('logger', () => {
  it('masks phone numbers, e-mails, card numbers and credentials in text', () => {
    expect(maskText('call 243990000001 now')).to.equal('call 243*****0001 now');
    expect(maskText('mail jane.doe@example.com')).to.equal('mail j***@example.com');
    expect(maskText('card 4242424242424242')).to.equal('card ************4242');
    expect(maskText('key svc_live_abcdefghijklmnop and sk_abcdefghijkl')).to.equal(
      'key svc_live_[redacted] and sk_[redacted]',
    );
    expect(maskText('whsec_0123456789abcdef')).to.equal('whsec_[redacted]');
  });

  it('masks MSISDNs in every spelling, card-like numbers in their usual groups, and whole secrets', () => {
    expect(maskText('to +243990000001, 00243812345678 or 243970000000.')).to.equal(
      'to +243*****0001, 00243*****5678 or 243*****0000.',
    );
    expect(
      maskText(
        'cards 4242 4242 4242 4242, 4000-0000-0000-3220, 378282246310005, 3782 822463 10005, 6011000990139424123',
      ),
    ).to.equal('cards ************4242, ************3220, ************0005, ************0005, ************4123');
    expect(maskText('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+/abc= end')).to.equal('whsec_[redacted] end');
    expect(maskText('sk_live+abc/def=ghi')).to.equal('sk_[redacted]');
  });

  it('masks the national form of a DRC number in text, and a phone number in a path whatever its spelling', () => {
    expect(maskText('looked up 0812345678 and 0990000001')).to.equal('looked up 0*****5678 and 0*****0001');
    const spellings = [
      '0812345678',
      '%2B243%2081%20234%205678',
      '243-81-234-5678',
      '(0)81.234.56.78',
      '%2B243812345678',
      '00243812345678',
      '243812345678',
      '081%20234%2056%2078',
      '%280%2981.234.56.78',
    ];
    for (const spelling of spellings) {
      const masked = maskPath(`/v1/phone-numbers/${spelling}`);
      expect(masked, spelling).to.equal('/v1/phone-numbers/*****5678');
    }
    // ids and route words stay readable
    const id = 'pay_0b7c2a9e-3d4f-4a1b-9c8d-123456789012';
    expect(maskPath(`/v1/payments/${id}/refund`)).to.equal(`/v1/payments/${id}/refund`);
    expect(maskPath('/v1/events/evt_0b7c2a9e-3d4f-4a1b-9c8d-123456789012_1764000000_ab12')).to.equal(
      '/v1/events/evt_0b7c2a9e-3d4f-4a1b-9c8d-123456789012_1764000000_ab12',
    );
    expect(maskPath('/v1/payments?limit=5')).to.equal('/v1/payments?limit=5');
    expect(maskPath('/%E0%A4%A')).to.equal('/%E0%A4%A');
  });

  it('leaves every other number of a message readable: ids, amounts, counts, ports, times', () => {
    for (const text of [
      'webhook retry delays 1 5 30 300 1800 7200 21600 ms',
      'amounts 100 2000 30000 400000 5 do not add up to 432106',
      'ledger transaction 4 of 12 failed: available 123456 < 2000000 (USD)',
      'connect ECONNREFUSED 127.0.0.1:6379 after 3 attempts in 1500 ms',
      'at 2026-11-21 10:00:00 UTC (1763719200), lease until 1763719205',
      'payment pay_3f2a9c1e-1234-4321-8123-123456789012 version 7',
      'port 65535, pid 4242, HTTP 503, 42 jobs waiting',
      'phone 24399000000 is 11 digits and 2439900000012 is 13',
    ]) {
      expect(maskText(text), text).to.equal(text.replace('2439900000012', '************0012'));
    }
  });

  it('never writes secrets, authorization, signatures or bodies, and masks personal data in fields', () => {
    const out = capture((log) => {
      log.info(
        {
          headers: { authorization: 'Bearer svc_test_xyzxyzxyzxyzxyz', 'x-signature': 'deadbeef' },
          secret: 'sk_plain_secret_value',
          body: { amount: 100 },
          customer: { phone: '243812345678', email: 'a.client@mail.cd' },
          note: 'paid by 243970000000',
        },
        'request for 243812345678',
      );
    });
    const line = JSON.parse(out.trim());
    expect(out).not.to.include('svc_test_xyz');
    expect(out).not.to.include('deadbeef');
    expect(out).not.to.include('sk_plain');
    expect(out).not.to.include('243812345678');
    expect(out).not.to.include('a.client@mail.cd');
    expect(line.body).to.equal('[redacted]');
    expect(line.headers.authorization).to.equal('[redacted]');
    expect(line.customer.phone).to.equal('243*****5678');
    expect(line.msg).to.equal('request for 243*****5678');
    expect(line.note).to.equal('paid by 243*****0000');
  });

  it('removes those fields at any depth and from a child logger’s bindings, and keeps the rest of the line', () => {
    const out = capture((log) =>
      log.child({ token: 'tok_child_binding', merchant: { id: 'm_1', secret: 'whsec_bindingbindingbinding' } }).info(
        {
          job: { attempt: { request: { headers: { 'x-service-signature': 'sig_deep_value' } } } },
          list: [{ password: 'pw_in_array' }, { card: { number: '4111111111111111' } }],
          status: 201,
          ms: 1.5,
        },
        'done',
      ),
    );
    expect(out).not.to.match(/tok_child_binding|whsec_binding|sig_deep_value|pw_in_array|4111111111111111/);
    const line = JSON.parse(out.trim());
    expect(line.token).to.equal('[redacted]');
    expect(line.merchant).to.deep.equal({ id: 'm_1', secret: '[redacted]' });
    expect(line.job.attempt.request.headers['x-service-signature']).to.equal('[redacted]');
    expect(line.list).to.deep.equal([{ password: '[redacted]' }, { card: '[redacted]' }]);
    expect(line).to.include({ status: 201, ms: 1.5, msg: 'done', name: 'test' });
  });

  it('masks errors too: message, stack and driver details', () => {
    const err = Object.assign(new Error('client 243990000001 a.b@mail.cd key svc_test_abcdefghijkl'), {
      detail: 'Key (phone)=(243812345678) already exists',
      code: '23505',
    });
    const out = capture((log) => log.error({ err }, 'failed'));
    expect(out).not.to.match(/243990000001|243812345678|a\.b@mail\.cd|svc_test_abcdefghijkl/);
    const line = JSON.parse(out.trim());
    expect(line.err.message).to.equal('client 243*****0001 a***@mail.cd key svc_test_[redacted]');
    expect(line.err.detail).to.equal('Key (phone)=(243*****5678) already exists');
    expect(line.err.code).to.equal('23505');
    expect(line.err.type).to.equal('Error');
  });
});
