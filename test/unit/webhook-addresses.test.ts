import { expect } from 'chai';
import { addressProblem } from '../../shared/webhooks/addresses';
import {
  checkedLookup,
  DestinationRefused,
  destinationProblem,
  urlProblem,
  type Resolver,
} from '../../shared/webhooks/destination';

const fakeDns =
  (table: Record<string, string[]>): Resolver =>
  async (host) => {
    if (!(host in table)) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return table[host];
  };

describe('live endpoint destinations', () => {
  const refused = [
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '100.64.0.1',
    '100.127.255.255',
    '169.254.169.254',
    '169.254.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '192.0.2.1',
    '198.18.0.1',
    '::1',
    '::',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '64:ff9b::a9fe:a9fe',
    '2002:c0a8:0101::1',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '2001:db8::1',
    '::127.0.0.1',
    // IPv6 forms embedding an IPv4 address, each spelling: judged like the IPv4 address they carry
    '::ffff:0:a9fe:a9fe',
    '::ffff:0:169.254.169.254',
    '::ffff:0:7f00:1',
    '::ffff:0:127.0.0.1',
    '::ffff:0:10.1.2.3',
    '0:0:0:0:ffff:0:c0a8:1',
    '::ffff:a9fe:a9fe',
    '0:0:0:0:0:ffff:169.254.169.254',
    '64:ff9b::169.254.169.254',
    '64:ff9b::7f00:1',
    '64:ff9b:1::a9fe:a9fe',
    '::a9fe:a9fe',
    '::169.254.169.254',
    '::10.0.0.1',
  ];
  for (const ip of refused) {
    it(`refuses ${ip}`, () => expect(addressProblem(ip)).to.be.a('string'));
  }
  const allowed = [
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '169.253.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    '::ffff:8.8.8.8',
    '::ffff:0:8.8.8.8',
    '64:ff9b::8.8.8.8',
  ];
  for (const ip of allowed) {
    it(`allows the public address ${ip}`, () => expect(addressProblem(ip)).to.equal(null));
  }

  it('judges URL text: https in live, http allowed in test, no credentials, no fragment, literal addresses in live', () => {
    expect(urlProblem('https://93.184.216.34/h', 'live')).to.equal(null);
    expect(urlProblem('http://93.184.216.34/h', 'live')).to.match(/https/);
    expect(urlProblem('http://127.0.0.1:3000/h', 'test')).to.equal(null);
    expect(urlProblem('https://127.0.0.1/h', 'live')).to.match(/loopback/);
    expect(urlProblem('https://[::ffff:a9fe:a9fe]/h', 'live')).to.match(/metadata/);
    for (const host of [
      '[::ffff:0:a9fe:a9fe]',
      '[::ffff:0:169.254.169.254]',
      '[64:ff9b::a9fe:a9fe]',
      '[::169.254.169.254]',
      '[0:0:0:0:0:ffff:a9fe:a9fe]',
    ]) {
      expect(urlProblem(`https://${host}/h`, 'live'), host).to.match(/metadata/);
      expect(urlProblem(`http://${host}/h`, 'test'), host).to.match(/metadata/);
    }
    expect(urlProblem('http://[::ffff:0:7f00:1]:8080/h', 'live')).to.match(/https/);
    expect(urlProblem('https://[::ffff:0:7f00:1]:8080/h', 'live')).to.match(/loopback/);
    expect(urlProblem('https://0x7f.1/h', 'live'), 'hex IPv4 is normalised by the URL parser').to.match(/loopback/);
    expect(urlProblem('https://u:p@example.com/h', 'test')).to.match(/credentials/);
    expect(urlProblem('https://example.com/h#x', 'test')).to.match(/fragment/);
    expect(urlProblem('ftp://example.com/h', 'test')).to.match(/https/);
    expect(urlProblem('nope', 'test')).to.match(/absolute URL/);
  });

  it('resolves live host names and refuses any internal answer, or none', async () => {
    const dns = fakeDns({
      'hooks.example': ['93.184.216.34'],
      'mixed.example': ['93.184.216.34', '10.0.0.8'],
      'meta.example': ['169.254.169.254'],
      'empty.example': [],
    });
    expect(await destinationProblem('https://hooks.example/h', 'live', dns)).to.equal(null);
    expect(await destinationProblem('https://mixed.example/h', 'live', dns)).to.match(/private/);
    expect(await destinationProblem('https://meta.example/h', 'live', dns)).to.match(/metadata/);
    expect(await destinationProblem('https://empty.example/h', 'live', dns)).to.match(/does not resolve/);
    expect(await destinationProblem('https://missing.example/h', 'live', dns)).to.match(/does not resolve/);
  });

  it('lets test endpoints reach loopback and public addresses, but no other internal address', async () => {
    const dns = fakeDns({
      'local.test': ['127.0.0.1'],
      'lan.test': ['192.168.1.20'],
      'meta.test': ['169.254.169.254'],
      'pub.test': ['93.184.216.34'],
    });
    expect(await destinationProblem('http://127.0.0.1:8080/h', 'test', dns)).to.equal(null);
    expect(await destinationProblem('http://local.test/h', 'test', dns)).to.equal(null);
    expect(await destinationProblem('http://pub.test/h', 'test', dns)).to.equal(null);
    expect(await destinationProblem('http://10.0.0.1/h', 'test', dns)).to.match(/private/);
    expect(await destinationProblem('http://169.254.169.254/latest/meta-data', 'test', dns)).to.match(/metadata/);
    expect(await destinationProblem('http://lan.test/h', 'test', dns)).to.match(/private/);
    expect(await destinationProblem('http://meta.test/h', 'test', dns)).to.match(/metadata/);
    expect(await destinationProblem('http://missing.test/h', 'test', dns)).to.match(/does not resolve/);
  });

  it('checks the addresses in the lookup the connection itself uses (no DNS rebinding window)', async () => {
    let answers = ['93.184.216.34'];
    const lookupFn = checkedLookup('live', async () => answers);
    const call = (all: boolean) =>
      new Promise<{ err: Error | null; address: unknown }>((resolve) =>
        lookupFn('rebind.example', { all }, (err: Error | null, address: unknown) => resolve({ err, address })),
      );
    expect(await call(false)).to.deep.equal({ err: null, address: '93.184.216.34' });
    expect((await call(true)).address).to.deep.equal([{ address: '93.184.216.34', family: 4 }]);
    answers = ['127.0.0.1'];
    const rebound = await call(false);
    expect(rebound.err).to.be.instanceOf(DestinationRefused);
    expect(rebound.err!.message).to.match(/loopback/);
  });
});
