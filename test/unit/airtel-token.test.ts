import { expect } from 'chai';
import { expiresInSeconds, refreshAtOf, TokenCache } from '../../shared/providers/airtel/token';

describe('airtel token expiry', () => {
  it('reads expires_in as a string or a number', () => {
    expect(expiresInSeconds('180')).to.equal(180);
    expect(expiresInSeconds(180)).to.equal(180);
    expect(expiresInSeconds(' 3600 ')).to.equal(3600);
    expect(expiresInSeconds('0')).to.equal(undefined);
    expect(expiresInSeconds('-5')).to.equal(undefined);
    expect(expiresInSeconds('soon')).to.equal(undefined);
    expect(expiresInSeconds(undefined)).to.equal(undefined);
  });

  it("refreshes a margin before expiry, never in the first half of a token's life", () => {
    expect(refreshAtOf(1_000_000, 180, 30_000)).to.equal(1_000_000 + 150_000);
    expect(refreshAtOf(0, 180, 0)).to.equal(180_000);
    expect(refreshAtOf(0, 20, 30_000)).to.equal(10_000);
    expect(refreshAtOf(0, 1, 30_000)).to.equal(500);
  });

  it('shares one fetch between concurrent callers and refetches only after the refresh time', async () => {
    let now = 0;
    let fetches = 0;
    const cache = new TokenCache(
      async () => {
        fetches += 1;
        await new Promise((r) => setTimeout(r, 10));
        return { accessToken: `t${fetches}`, expiresInS: 180 };
      },
      () => now,
      30_000,
    );
    const got = await Promise.all(Array.from({ length: 10 }, () => cache.get()));
    expect(new Set(got)).to.deep.equal(new Set(['t1']));
    expect(fetches).to.equal(1);
    now = 149_999;
    expect(await cache.get()).to.equal('t1');
    now = 150_000;
    expect(await cache.get()).to.equal('t2');
    expect(fetches).to.equal(2);
  });

  it('replaces a rejected token once, however many callers saw it rejected', async () => {
    let fetches = 0;
    const cache = new TokenCache(
      async () => ({ accessToken: `t${++fetches}`, expiresInS: 180 }),
      () => 0,
      30_000,
    );
    const first = await cache.get();
    const replaced = await Promise.all([cache.replace(first), cache.replace(first), cache.replace(first)]);
    expect(replaced).to.deep.equal(['t2', 't2', 't2']);
    expect(fetches).to.equal(2);
    expect(await cache.replace('t2')).to.equal('t3');
  });

  it('lets a failed fetch fail every waiting caller, and the next call try again', async () => {
    let fetches = 0;
    const cache = new TokenCache(
      async () => {
        fetches += 1;
        if (fetches === 1) throw new Error('down');
        return { accessToken: 'ok', expiresInS: 180 };
      },
      () => 0,
      30_000,
    );
    const results = await Promise.allSettled([cache.get(), cache.get()]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    expect(await cache.get()).to.equal('ok');
    expect(fetches).to.equal(2);
  });
});
