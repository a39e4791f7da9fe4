import { expect } from 'chai';
import {
  amountFromWire,
  amountOnWire,
  decimalsOf,
  fromAirtelId,
  internationalMsisdn,
  JsonNumber,
  nationalMsisdn,
  referenceOf,
  toAirtelId,
  writeJson,
} from '../../shared/providers/airtel/wire';

describe('airtel wire: amounts', () => {
  it('writes minor units as a JSON number in major units, digit for digit', () => {
    expect(writeJson({ amount: amountOnWire(1050, 'USD') })).to.equal('{"amount":10.5}');
    expect(writeJson({ amount: amountOnWire(1000, 'USD') })).to.equal('{"amount":10}');
    expect(writeJson({ amount: amountOnWire(1, 'USD') })).to.equal('{"amount":0.01}');
    expect(writeJson({ amount: amountOnWire(7, 'CDF') })).to.equal('{"amount":0.07}');
    // a float would write 0.30000000000000004 for 0.1 + 0.2: the text never passes through one
    expect(writeJson({ amount: amountOnWire(30, 'USD') })).to.equal('{"amount":0.3}');
    expect(writeJson({ amount: amountOnWire(100_000_000_000_1, 'USD') })).to.equal('{"amount":10000000000.01}');
  });

  it('writes every amount up to 10^12 minor units so that JSON.parse reads back the same value', () => {
    const samples = [1, 7, 10, 99, 101, 1005, 123456, 999999999, 100000000001, 999999999999, 1_000_000_000_000];
    for (let i = 0; i < 2000; i++) samples.push(Math.floor(Math.random() * 1_000_000_000_000) + 1);
    for (const minor of samples) {
      const text = writeJson({ a: amountOnWire(minor, 'USD') });
      const parsed = JSON.parse(text) as { a: number };
      expect(amountFromWire(parsed.a, 'USD'), text).to.equal(minor);
    }
  });

  it('refuses a plain float in a body: amounts go as JsonNumber', () => {
    expect(() => writeJson({ amount: 10.5 })).to.throw(/JsonNumber/);
    expect(writeJson({ n: 3, s: 'x"y', b: true, z: null, skip: undefined, l: [new JsonNumber('1.5')] })).to.equal(
      '{"n":3,"s":"x\\"y","b":true,"z":null,"l":[1.5]}',
    );
    expect(() => new JsonNumber('1e3')).to.throw();
    expect(() => new JsonNumber('01.5')).to.throw();
  });

  it('reads echoed amounts exactly, as numbers or strings', () => {
    expect(amountFromWire(100, 'USD')).to.equal(10000);
    expect(amountFromWire(100.5, 'USD')).to.equal(10050);
    expect(amountFromWire('100.00', 'USD')).to.equal(10000);
    expect(amountFromWire(0.07, 'CDF')).to.equal(7);
    expect(amountFromWire(10.001, 'USD')).to.equal(undefined);
    expect(amountFromWire(-1, 'USD')).to.equal(undefined);
    expect(amountFromWire(1e21, 'USD')).to.equal(undefined);
    expect(amountFromWire('abc', 'USD')).to.equal(undefined);
    expect(amountFromWire(null, 'USD')).to.equal(undefined);
  });

  it("counts the decimals of a parsed JSON number (the simulator's check)", () => {
    expect(decimalsOf(JSON.parse('10.10') as number)).to.equal(1);
    expect(decimalsOf(JSON.parse('10.123') as number)).to.equal(3);
    expect(decimalsOf(JSON.parse('10') as number)).to.equal(0);
    expect(decimalsOf(JSON.parse('0.07') as number)).to.equal(2);
  });
});

describe('airtel wire: phone numbers', () => {
  it('sends the national 9 digits, without 243', () => {
    expect(nationalMsisdn('243970000001')).to.equal('970000001');
    expect(internationalMsisdn('970000001')).to.equal('243970000001');
    expect(() => nationalMsisdn('+243970000001')).to.throw();
    expect(() => nationalMsisdn('0970000001')).to.throw();
    expect(() => nationalMsisdn('24397000000')).to.throw();
    expect(() => internationalMsisdn('243970000001')).to.throw();
  });
});

describe('airtel wire: ids', () => {
  const uuid = '0f8fad5b-d9cb-469f-a165-70867728950e';

  it('maps our ids to a compact transaction.id and back, deterministically', () => {
    expect(toAirtelId(`pay_${uuid}`)).to.equal('P0f8fad5bd9cb469fa16570867728950e');
    expect(toAirtelId(`re_${uuid}`)).to.equal('R0f8fad5bd9cb469fa16570867728950e');
    expect(toAirtelId(`po_${uuid}`)).to.equal('O0f8fad5bd9cb469fa16570867728950e');
    expect(toAirtelId(`pay_${uuid}`))
      .to.have.length(33)
      .and.to.match(/^[A-Za-z0-9]+$/);
    expect(toAirtelId(`pay_${uuid}`)).to.equal(toAirtelId(`pay_${uuid}`));
    expect(fromAirtelId('P0f8fad5bd9cb469fa16570867728950e')).to.deep.equal({ kind: 'payment', id: `pay_${uuid}` });
    expect(fromAirtelId('O0f8fad5bd9cb469fa16570867728950e')).to.deep.equal({ kind: 'payout', id: `po_${uuid}` });
  });

  it('can send our id as it is, and reads it back', () => {
    expect(toAirtelId(`po_${uuid}`, 'ours')).to.equal(`po_${uuid}`);
    expect(fromAirtelId(`pay_${uuid}`)).to.deep.equal({ kind: 'payment', id: `pay_${uuid}` });
  });

  it('refuses what is not one of our ids, both ways', () => {
    expect(() => toAirtelId('pay_123')).to.throw();
    expect(() => toAirtelId(`ch_${uuid}`)).to.throw();
    expect(fromAirtelId('MP210603.1234.L06941')).to.equal(undefined);
    expect(fromAirtelId('X0f8fad5bd9cb469fa16570867728950e')).to.equal(undefined);
    expect(fromAirtelId('P0f8fad5bd9cb469fa16570867728950')).to.equal(undefined);
  });

  it('writes a reference Airtel takes: 4 to 64 letters, digits and spaces', () => {
    expect(referenceOf('Order #42 — café', 'Pabc')).to.equal('Order 42 caf');
    expect(referenceOf(null, 'P0f8fad5b')).to.equal('P0f8fad5b');
    expect(referenceOf('ab', 'P0f8fad5b')).to.equal('P0f8fad5b');
    expect(referenceOf('x'.repeat(100), 'P')).to.have.length(64);
  });
});
