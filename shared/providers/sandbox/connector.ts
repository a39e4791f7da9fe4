import type { Currency, Direction, Environment, Operator } from '../../vocabulary';
import { permanent, retryable, ProviderError } from '../errors';
import { CALLBACK_SIGNATURE_HEADER, verifyCallbackSignature } from '../signature';
import type { HttpAnswer, HttpClient } from '../../httpClient';
import type { ProviderAccepted, ProviderStatus } from '../types';
import type {
  AmountRule,
  CallbackAnswer,
  CallbackRequest,
  Capabilities,
  Connector,
  NormalisedCallback,
  OperationRef,
  PayoutRequest,
  ProviderEndpoint,
  PushRequest,
  RefundRequest,
  Verification,
} from '../connector';
import { parseCallbackBody } from './protocol';
import { CURRENCY_EXPONENT } from '../amounts';
import type { ConnectorName } from '../table';

export interface HttpProviderBaseOptions {
  id: string;
  /** its entry in the connector table (shared/providers/table.ts) */
  connector: ConnectorName;
  environment: Environment;
  /** base URL of this provider's API, e.g. https://provider.example/vodacom */
  url: string;
  apiKey: string;
  callbackSecret: string;
  callbackUrl: string;
  timeoutMs: number;
  /** the connections it calls over (one client per registry) */
  client: HttpClient;
}

interface ErrorBody {
  error?: { code?: unknown; message?: unknown };
}

const ok = (res: HttpAnswer) => res.status >= 200 && res.status < 300;

/** Statuses worth trying again: the provider is busy or broken, or does not accept our credentials yet. */
const RETRYABLE_STATUS = new Set([401, 403, 408, 409, 425, 429]);

/**
 * The service's own provider protocol (./protocol.ts), spoken by the sandbox provider and the card
 * sandbox's acquirer: authenticated calls with our id as the idempotency key, asks, signed
 * callbacks, and ProviderErrors that say whether another attempt may succeed. The sandbox's
 * mobile-money connector (below) and the card sandbox's (shared/providers/cardSandbox/connector.ts) add
 * their requests. Test keys only: no live traffic speaks it, live keys go through their own
 * connectors (shared/providers/<connector>/).
 */
export class HttpProviderBase implements ProviderEndpoint {
  readonly id: string;
  readonly connector: ConnectorName;
  readonly environment: Environment;

  constructor(protected readonly opts: HttpProviderBaseOptions) {
    this.id = opts.id;
    this.connector = opts.connector;
    this.environment = opts.environment;
  }

  async ask(op: OperationRef): Promise<ProviderStatus> {
    const { kind, id: objectId } = op;
    const res = await this.call('GET', `/v1/transactions/${encodeURIComponent(objectId)}`);
    if (res.status === 404) return { state: 'not_found' };
    const body = this.json(res);
    if (!ok(res)) throw this.failure(res.status, body);
    const b = body as {
      kind?: unknown;
      status?: unknown;
      provider_ref?: unknown;
      failure_code?: unknown;
      failure_message?: unknown;
    };
    if (b.kind !== undefined && b.kind !== kind)
      throw permanent('provider-protocol', `provider reports ${objectId} as a ${JSON.stringify(b.kind)}`);
    const providerRef = typeof b.provider_ref === 'string' ? b.provider_ref : null;
    switch (b.status) {
      case 'pending':
      case 'expired':
      case 'succeeded':
        return { state: b.status, providerRef };
      case 'failed':
      case 'cancelled':
        return {
          state: b.status,
          providerRef,
          failureCode: typeof b.failure_code === 'string' ? b.failure_code : 'provider-failed',
          failureMessage: typeof b.failure_message === 'string' ? b.failure_message : 'The provider reported a failure',
        };
      default:
        throw retryable('provider-protocol', `provider answered an unknown status for ${objectId}`);
    }
  }

  verifyCallback({ raw, headers, nowUnix }: CallbackRequest): Promise<Verification> {
    const header = headers[CALLBACK_SIGNATURE_HEADER];
    return Promise.resolve(
      verifyCallbackSignature(this.opts.callbackSecret, raw, Array.isArray(header) ? undefined : header, nowUnix)
        ? 'verified'
        : 'invalid',
    );
  }

  /** The protocol's callbacks carry no amount: the operation's own is what moved. */
  parseCallback(raw: Buffer): NormalisedCallback {
    return { ...parseCallbackBody(raw), amount: null, currency: null };
  }

  callbackAnswer(): CallbackAnswer {
    return { status: 200, body: { received: true } };
  }

  /** POSTs a request under our id (its idempotency key); the 2xx answer's body, with a provider_ref. */
  protected async create(
    path: string,
    externalId: string,
    fields: Record<string, unknown>,
  ): Promise<ProviderAccepted & { body: Record<string, unknown> }> {
    const res = await this.call(
      'POST',
      path,
      { external_id: externalId, ...fields, callback_url: this.opts.callbackUrl },
      externalId,
    );
    const body = this.json(res);
    if (!ok(res)) throw this.failure(res.status, body);
    const ref = (body as { provider_ref?: unknown }).provider_ref;
    if (typeof ref !== 'string' || ref.length === 0 || ref.length > 200) {
      // the provider may well have taken it: the same idempotency key will fetch the answer again
      throw retryable('provider-protocol', 'provider accepted without a provider_ref');
    }
    return { providerRef: ref, body: body as Record<string, unknown> };
  }

  private async call(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    idempotencyKey?: string,
  ): Promise<HttpAnswer> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.opts.apiKey}`, Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
    let res: HttpAnswer;
    try {
      res = await this.opts.client.request(this.opts.url + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        timeoutMs: this.opts.timeoutMs,
      });
    } catch (err) {
      if ((err as Error).name === 'TimeoutError')
        throw retryable('provider-timeout', `${this.id} did not answer within ${this.opts.timeoutMs} ms`);
      throw retryable('provider-unreachable', `${this.id} could not be reached: ${(err as Error).message}`);
    }
    // a redirect is not followed: the provider is not where it was configured
    if (res.status >= 300 && res.status < 400)
      throw retryable('provider-unreachable', `${this.id} could not be reached: redirected (HTTP ${res.status})`);
    return res;
  }

  private json(res: HttpAnswer): unknown {
    try {
      return JSON.parse(res.body.toString('utf8'));
    } catch {
      return {};
    }
  }

  private failure(status: number, body: unknown): ProviderError {
    const e = (body as ErrorBody)?.error;
    const code = typeof e?.code === 'string' && /^[a-z0-9_-]{1,64}$/.test(e.code) ? e.code : `provider-http-${status}`;
    const message = typeof e?.message === 'string' ? e.message.slice(0, 300) : `${this.id} answered HTTP ${status}`;
    if (status >= 500 || RETRYABLE_STATUS.has(status)) return retryable(code, message);
    return permanent(code, message);
  }
}

/** The fields a collection and a payout send alike. */
const transfer = (req: PushRequest | PayoutRequest) => ({
  amount: req.amount,
  currency: req.currency,
  msisdn: req.msisdn,
  description: req.description ?? null,
});

/** The sandbox takes every amount its currency can carry, in every direction. */
const SANDBOX_RULE: AmountRule = { decimals: CURRENCY_EXPONENT.USD, min: null, max: null };

/** The sandbox provider's connector for one operator (test keys only): the protocol above, per operator at {sandbox}/{operator}. */
export class SandboxConnector extends HttpProviderBase implements Connector {
  readonly capabilities: Capabilities;

  constructor(opts: HttpProviderBaseOptions & { operator: Operator }) {
    super(opts);
    const directions: Direction[] = ['collection', 'refund', 'payout'];
    this.capabilities = {
      operators: [opts.operator],
      directions,
      partialRefunds: true,
      amountRule: (_operator: Operator, currency: Currency) => ({
        ...SANDBOX_RULE,
        decimals: CURRENCY_EXPONENT[currency],
      }),
    };
  }

  push(req: PushRequest): Promise<ProviderAccepted> {
    return this.accepted('/v1/collections', req.paymentId, transfer(req));
  }

  refund(req: RefundRequest): Promise<ProviderAccepted> {
    return this.accepted('/v1/refunds', req.refundId, {
      payment_external_id: req.paymentId,
      payment_provider_ref: req.paymentProviderRef,
      amount: req.amount,
      currency: req.currency,
      msisdn: req.msisdn,
    });
  }

  payout(req: PayoutRequest): Promise<ProviderAccepted> {
    return this.accepted('/v1/payouts', req.payoutId, transfer(req));
  }

  private async accepted(path: string, externalId: string, fields: Record<string, unknown>): Promise<ProviderAccepted> {
    const { providerRef } = await this.create(path, externalId, fields);
    return { providerRef };
  }
}
