import { expect } from 'chai';
import { Writable } from 'node:stream';
import { createLogger, maskText, type Logger } from '../../shared/logger';

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
    expect(maskText('key svc_live_abcdefghijklmnop and sk_abcdefghijkl')).to.equal('key svc_live_[redacted] and sk_[redacted]');
    expect(maskText('whsec_0123456789abcdef')).to.equal('whsec_[redacted]');
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

  it('masks errors too: message, stack and driver details', () => {
    const err = Object.assign(new Error('client 243990000001 a.b@mail.cd key svc_test_abcdefghijkl'), { detail: 'Key (phone)=(243812345678) already exists', code: '23505' });
    const out = capture((log) => log.error({ err }, 'failed'));
    expect(out).not.to.match(/243990000001|243812345678|a\.b@mail\.cd|svc_test_abcdefghijkl/);
    const line = JSON.parse(out.trim());
    expect(line.err.message).to.equal('client 243*****0001 a***@mail.cd key svc_test_[redacted]');
    expect(line.err.detail).to.equal('Key (phone)=(243*****5678) already exists');
    expect(line.err.code).to.equal('23505');
    expect(line.err.type).to.equal('Error');
  });
});
