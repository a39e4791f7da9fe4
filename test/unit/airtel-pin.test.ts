import { expect } from 'chai';
import { constants, generateKeyPairSync, privateDecrypt } from 'node:crypto';
import { decryptPin, encryptPin, publicKeyOf } from '../../shared/providers/airtel/pin';

describe('airtel PIN encryption', () => {
  const v2 = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const v1 = generateKeyPairSync('rsa', { modulusLength: 1024 });
  const pem = (k: typeof v2) => ({
    pub: k.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    priv: k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  });

  it('round-trips with OAEP (SHA-256), the v2 keys', () => {
    const { pub, priv } = pem(v2);
    const enc = encryptPin('1234', publicKeyOf(pub), 'oaep');
    expect(Buffer.from(enc, 'base64')).to.have.length(256);
    expect(enc).not.to.include('1234');
    expect(decryptPin(enc, priv, 'oaep')).to.equal('1234');
    // the standard OAEP-SHA256 decryption reads it too: no home-made format
    expect(
      privateDecrypt(
        { key: priv, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
        Buffer.from(enc, 'base64'),
      ).toString(),
    ).to.equal('1234');
    expect(decryptPin(enc, priv, 'oaep', 'sha1')).to.equal(undefined);
  });

  it('round-trips with PKCS#1 v1.5, the v1 key, undoing the padding by hand', () => {
    const { pub, priv } = pem(v1);
    const enc = encryptPin('4321', publicKeyOf(pub), 'pkcs1');
    expect(Buffer.from(enc, 'base64')).to.have.length(128);
    expect(decryptPin(enc, priv, 'pkcs1')).to.equal('4321');
    expect(decryptPin(enc, priv, 'oaep')).to.equal(undefined);
  });

  it('is randomised: the same PIN never encrypts twice the same', () => {
    const { pub } = pem(v2);
    const key = publicKeyOf(pub);
    expect(encryptPin('1234', key, 'oaep')).not.to.equal(encryptPin('1234', key, 'oaep'));
    expect(encryptPin('1234', key, 'pkcs1')).not.to.equal(encryptPin('1234', key, 'pkcs1'));
  });

  it('takes the key as Airtel publishes it: bare base64 DER as well as PEM', () => {
    const { priv } = pem(v2);
    const der = v2.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    expect(decryptPin(encryptPin('9999', publicKeyOf(der), 'oaep'), priv, 'oaep')).to.equal('9999');
  });

  it('refuses garbage and a wrong key', () => {
    const { pub } = pem(v2);
    const other = pem(generateKeyPairSync('rsa', { modulusLength: 2048 }));
    expect(decryptPin(encryptPin('1234', publicKeyOf(pub), 'oaep'), other.priv, 'oaep')).to.equal(undefined);
    expect(decryptPin('bm90IGEgcGlu', other.priv, 'pkcs1')).to.equal(undefined);
  });
});
