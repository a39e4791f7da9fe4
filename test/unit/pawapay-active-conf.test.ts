import { expect } from 'chai';
import {
  defaultRules,
  operationEntries,
  parseActiveConf,
  parseAvailability,
  ruleKey,
} from '../../shared/providers/pawapay/activeConf';
import type { HttpAnswer, HttpClient } from '../../shared/httpClient';
import { PawapayConnector } from '../../shared/providers/pawapay/connector';
import { checkContract } from '../../shared/providers/pawapay/contract';

const vodacomCdf = {
  DEPOSIT: {
    minAmount: '500',
    maxAmount: '1000000',
    decimalsInAmount: 'NONE',
    status: 'OPERATIONAL',
    authType: 'PROVIDER_AUTH',
  },
  PAYOUT: { minAmount: '1000', maxAmount: '1000000', decimalsInAmount: 'NONE', status: 'OPERATIONAL' },
};
const airtelUsd = {
  DEPOSIT: { minAmount: '0.10', maxAmount: '2500.50', decimalsInAmount: 'TWO_PLACES', status: 'OPERATIONAL' },
  REFUND: { minTransactionLimit: '1', maxTransactionLimit: '2500', decimalsInAmount: 'TWO_PLACES' },
};

function conf(shape: 'object' | 'array') {
  const ops = (o: Record<string, object>) =>
    shape === 'object' ? o : Object.entries(o).map(([operationType, v]) => ({ operationType, ...v }));
  return {
    companyName: 'Merchant',
    countries: [
      {
        country: 'COD',
        providers: [
          { provider: 'VODACOM_MPESA_COD', currencies: [{ currency: 'CDF', operationTypes: ops(vodacomCdf) }] },
          {
            provider: 'AIRTEL_COD',
            currencies: [
              { currency: 'USD', operationTypes: ops(airtelUsd) },
              { currency: 'XAF', operationTypes: ops(airtelUsd) },
            ],
          },
          { provider: 'MTN_MOMO_ZMB', currencies: [{ currency: 'USD', operationTypes: ops(airtelUsd) }] },
        ],
      },
    ],
  };
}

describe('pawaPay active-conf and availability', () => {
  for (const shape of ['object', 'array'] as const) {
    it(`reads decimals and limits per operator, currency and direction (operationTypes as an ${shape})`, () => {
      const body = conf(shape);
      expect(checkContract('activeConf', body).ok).to.equal(true);
      const rules = parseActiveConf(body);
      expect(rules.get(ruleKey('vodacom', 'CDF', 'collection'))).to.deep.equal({
        decimals: 0,
        min: 50000,
        max: 100000000,
      });
      expect(rules.get(ruleKey('vodacom', 'CDF', 'payout'))).to.deep.equal({
        decimals: 0,
        min: 100000,
        max: 100000000,
      });
      expect(rules.get(ruleKey('airtel', 'USD', 'collection'))).to.deep.equal({ decimals: 2, min: 10, max: 250050 });
      // the older field names
      expect(rules.get(ruleKey('airtel', 'USD', 'refund'))).to.deep.equal({ decimals: 2, min: 100, max: 250000 });
      // not listed: cannot be carried
      expect(rules.get(ruleKey('vodacom', 'CDF', 'refund'))).to.equal(undefined);
      expect(rules.get(ruleKey('vodacom', 'USD', 'collection'))).to.equal(undefined);
      expect(rules.get(ruleKey('orange', 'CDF', 'collection'))).to.equal(undefined);
      expect(rules.size).to.equal(4);
    });
  }

  it('reads an unknown decimalsInAmount as none, and refuses a body that is not an object', () => {
    const body = {
      countries: [
        {
          country: 'COD',
          providers: [
            {
              provider: 'ORANGE_COD',
              currencies: [
                { currency: 'CDF', operationTypes: { DEPOSIT: { decimalsInAmount: 'THREE', minAmount: 'x' } } },
              ],
            },
          ],
        },
      ],
    };
    expect(parseActiveConf(body).get(ruleKey('orange', 'CDF', 'collection'))).to.deep.equal({
      decimals: 0,
      min: null,
      max: null,
    });
    expect(() => parseActiveConf([])).to.throw('not an object');
  });

  it('has documented defaults before the first answer: VODACOM_MPESA_COD takes no decimals in CDF, africell nothing', () => {
    const rules = defaultRules();
    expect(rules.get(ruleKey('vodacom', 'CDF', 'collection'))).to.deep.equal({ decimals: 0, min: null, max: null });
    expect(rules.get(ruleKey('vodacom', 'USD', 'payout'))?.decimals).to.equal(2);
    expect(rules.get(ruleKey('airtel', 'CDF', 'refund'))?.decimals).to.equal(2);
    expect(rules.get(ruleKey('orange', 'USD', 'collection'))?.decimals).to.equal(2);
    expect(rules.get(ruleKey('africell', 'CDF', 'collection'))).to.equal(undefined);
  });

  it('reads availability in both shapes: CLOSED closed, DELAYED delayed, anything else operational', () => {
    const arrayShape = [
      {
        country: 'COD',
        providers: [
          {
            provider: 'VODACOM_MPESA_COD',
            operationTypes: [
              { operationType: 'DEPOSIT', status: 'OPERATIONAL' },
              { operationType: 'PAYOUT', status: 'DELAYED' },
              { operationType: 'REMITTANCE', status: 'CLOSED' },
            ],
          },
          {
            provider: 'AIRTEL_COD',
            operationTypes: [
              { operationType: 'DEPOSIT', status: 'CLOSED' },
              { operationType: 'REFUND', status: 'SOMETHING' },
            ],
          },
        ],
      },
    ];
    const objectShape = [
      {
        country: 'COD',
        providers: [
          { provider: 'ORANGE_COD', operationTypes: { DEPOSIT: 'CLOSED', PAYOUT: 'OPERATIONAL', REFUND: 'DELAYED' } },
          { provider: 'MTN_MOMO_ZMB', operationTypes: { DEPOSIT: 'CLOSED' } },
        ],
      },
    ];
    expect(checkContract('availability', arrayShape).ok).to.equal(true);
    expect(checkContract('availability', objectShape).ok).to.equal(true);
    expect(parseAvailability(arrayShape)).to.deep.equal({
      vodacom: { collection: 'operational', payout: 'delayed' },
      airtel: { collection: 'closed', refund: 'operational' },
    });
    expect(parseAvailability(objectShape)).to.deep.equal({
      orange: { collection: 'closed', payout: 'operational', refund: 'delayed' },
    });
    expect(parseAvailability({})).to.deep.equal({});
  });

  it('lists operation types of either shape, ignoring what is neither', () => {
    expect(operationEntries({ DEPOSIT: 1 })).to.deep.equal([['DEPOSIT', 1]]);
    expect(operationEntries([{ operationType: 'PAYOUT', x: 1 }, { nope: true }, 'x'])).to.deep.equal([
      ['PAYOUT', { operationType: 'PAYOUT', x: 1 }],
    ]);
    expect(operationEntries('DEPOSIT')).to.deep.equal([]);
  });
});

describe('PawapayConnector amount rules: defaults, then active-conf, kept when an answer is unusable', () => {
  it('starts from the defaults, takes a good answer, keeps it through a failed or empty one', async () => {
    let answer: { status: number; body: unknown } = { status: 200, body: conf('object') };
    const client = {
      async request(): Promise<HttpAnswer> {
        return { status: answer.status, headers: {}, body: Buffer.from(JSON.stringify(answer.body)) };
      },
      close() {},
    } as unknown as HttpClient;
    const c = new PawapayConnector({
      environment: 'live',
      baseUrl: 'http://pawapay.invalid',
      apiToken: 't',
      callbackSignatures: 'off',
      timeoutMs: 100,
      client,
      activeConfRefreshMs: 0,
    });
    expect(c.activeConfReady).to.equal(false);
    expect(c.capabilities.amountRule('orange', 'CDF', 'collection')).to.deep.equal({
      decimals: 2,
      min: null,
      max: null,
    });
    expect(await c.refreshActiveConf()).to.equal(true);
    expect(c.capabilities.amountRule('vodacom', 'CDF', 'collection')).to.deep.equal({
      decimals: 0,
      min: 50000,
      max: 100000000,
    });
    expect(c.capabilities.amountRule('orange', 'CDF', 'collection')).to.equal(undefined);
    answer = { status: 500, body: {} };
    expect(await c.refreshActiveConf()).to.equal(false);
    answer = { status: 200, body: { countries: [] } };
    expect(await c.refreshActiveConf()).to.equal(false);
    answer = { status: 200, body: { nope: true } };
    expect(await c.refreshActiveConf()).to.equal(false);
    expect(c.capabilities.amountRule('vodacom', 'CDF', 'collection')).to.deep.equal({
      decimals: 0,
      min: 50000,
      max: 100000000,
    });
    expect(c.activeConfReady).to.equal(true);
  });
});
