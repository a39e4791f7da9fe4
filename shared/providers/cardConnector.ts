import type { CardDetails } from '../db/rows';
import type { Currency } from '../vocabulary';
import type { AmountRule, ProviderEndpoint } from './connector';
import { ProviderError } from './errors';
import type { ProviderAccepted } from './types';

/**
 * A card connector: everything about one card acquirer's or gateway's API (docs/decisions.md
 * "Cards (hosted checkout)", docs/adding-a-connector.md). The card payment kind
 * (shared/cards/kind.ts) and the hosted checkout (api/checkout) know an acquirer only through this
 * interface, as the kernel knows a mobile-money provider through `Connector`; neither ever sees a
 * card number. Test keys reach the card sandbox (shared/providers/cardSandbox/connector.ts); live keys the
 * connector `LIVE_CARD` names (none: 422 `method-unavailable`).
 *
 * The checkout's part, in order:
 * 1. `GET /checkout/{id}`: the page's CSP allows `origins` (frames, scripts); a payment still to be
 *    paid gets the connector's `cardForm` (a vault's iframe, or a gateway's script and session);
 * 2. `POST /checkout/{id}/pay`: the page posts `{<source.field>: <payment source>}`, checked against
 *    `source.pattern`; the source is stored with the charge job, never logged;
 * 3. the card-charge job calls `charge` once per posted source (our payment id as the idempotency
 *    key): approved, declined, or a 3-D Secure challenge for the client;
 * 4. the outcome comes by the connector's notification (`verifyCallback`, `parseCallback`) or by
 *    `ask`, never by the browser's word.
 *
 * The operator's refund (POST /admin/payments/{id}/refunds, docs/decisions.md#operator-admin-api):
 * the refund pool calls `refund` once per refund (our refund id as the idempotency key, the same
 * ids again after a timeout or a 5xx); its outcome comes in the answer (a gateway that refunds at
 * once), or later by notification or `ask` (kind `refund`, with the refund's payment id).
 */

/** What a card connector can carry. Amounts in minor units. */
export interface CardCapabilities {
  /** the currencies it takes */
  readonly currencies: readonly Currency[];
  /** decimals, min and max in a currency; undefined: it takes no such currency */
  amountRule(currency: Currency): AmountRule | undefined;
  /** whether a refund may be for less than the payment */
  readonly partialRefunds: boolean;
  /** whether an authorised payment not yet captured can be voided */
  readonly void: boolean;
}

/** The origins the checkout page's Content-Security-Policy allows beside its own (whatever the payment's state). */
export interface CardPageOrigins {
  /** frame-src: the vault's card fields, the acquirer's 3-D Secure page, a gateway's field iframes */
  readonly frames: readonly string[];
  /** script-src: a gateway's own script loaded by the page (its session.js); none for the sandbox */
  readonly scripts: readonly string[];
}

/** What the checkout's form needs to take a card for one payment (GET /checkout/{id}, payment still to be paid). */
export type CardForm =
  /**
   * The card fields are a page of the vault's origin, framed by the checkout: it hands the page a
   * payment source by postMessage (exact origin, as api/checkout/assets/checkout.js expects).
   */
  | { readonly kind: 'vault-frame'; readonly frameUrl: string; readonly vaultOrigin: string }
  /**
   * The gateway's own script (a hosted session: `scriptUrl` on the gateway's origin) turns the
   * page's field containers into its iframes, stores the fields in the session `sessionId`, and the
   * page posts that session id. `data` becomes data-* attributes of the page for its script.
   */
  | {
      readonly kind: 'hosted-session';
      readonly scriptUrl: string;
      readonly sessionId: string;
      readonly data: Readonly<Record<string, string>>;
    };

/** The payment for which the form is prepared (a gateway may open a session for its amount). */
export interface CardFormRequest {
  /** pay_<uuid> */
  paymentId: string;
  /** minor units */
  amount: number;
  currency: Currency;
  description: string | null;
  lang: 'fr' | 'en';
}

/** What the checkout page posts to POST /checkout/{id}/pay: one field whose value is the payment source. */
export interface PaymentSourceRule {
  /** the body's one field (`token` for a vault token, `session` for a gateway session id) */
  readonly field: string;
  /** what a well-formed source looks like (anything else is 400 validation-failed) */
  readonly pattern: RegExp;
  /** the validation message's description of it, e.g. `a card token (tok_…)` */
  readonly description: string;
  /** the page also posts `browser`, the payer's browser for EMV 3-D Secure (a gateway's AUTHENTICATE_PAYER) */
  readonly browser?: boolean;
}

export interface ChargeRequest {
  /** pay_<uuid>: the acquirer's idempotency key (a charge repeated after a crash reuses it) */
  paymentId: string;
  /** the opaque payment source the checkout posted: a vault token, a gateway session id */
  source: string;
  /** minor units */
  amount: number;
  currency: Currency;
  description: string | null;
  /** the n-th payment source posted for this payment (1, 2, …): a gateway's per-attempt transaction ids */
  attempt?: number;
  /** the payer's browser as the checkout page read it (EMV 3-D Secure needs it); absent when the page sent none */
  browser?: BrowserInfo;
}

/** The payer's browser, for EMV 3-D Secure (the checkout page reads it; the server adds what the request says). */
export interface BrowserInfo {
  userAgent: string;
  acceptHeaders: string;
  colorDepth: number;
  javaEnabled: boolean;
  language: string;
  screenHeight: number;
  screenWidth: number;
  /** Date.getTimezoneOffset(): minutes from local time to UTC */
  timeZone: number;
  ipAddress?: string;
}

/**
 * The issuer's 3-D Secure challenge: a page the checkout frames (on an origin of `origins.frames`,
 * or the service's own). `html`: the gateway's redirect HTML, which the checkout keeps and serves
 * at `url` on its own origin (a gateway that hands a fragment to insert rather than a page).
 */
export interface CardChallenge {
  url: string;
  html?: string;
}

export interface ChargeAnswer extends ProviderAccepted {
  /** approved: final by notification or ask; declined: failed now; challenge: the client authenticates first */
  outcome: 'approved' | 'declined' | 'challenge';
  /**
   * approved only: the answer is the acquirer's own record that the money moved (a gateway's PAY
   * answered SUCCESS for the payment's amount): the payment succeeds now. Absent or false: it
   * stays pending until a notification or an ask confirms it.
   */
  settled?: boolean;
  challenge: CardChallenge | null;
  /** what the acquirer says of the card (never its number) */
  card: CardDetails | null;
  /** our vocabulary's failure code of a decline (card-declined, insufficient-funds, expired-card, authentication-failed) */
  failureCode: string | null;
  failureMessage: string | null;
}

export interface CardRefundRequest {
  /** re_<uuid>: the acquirer's idempotency key (a retry after a timeout or a 5xx reuses it) */
  refundId: string;
  /** pay_<uuid>: the payment refunded (a gateway's order), and the acquirer's reference of its charge */
  paymentId: string;
  paymentProviderRef: string | null;
  /** minor units, at most what is left to refund of the payment */
  amount: number;
  currency: Currency;
  /** less than the payment's amount_charged (only sent to a connector whose capabilities allow it) */
  partial: boolean;
  /** the operator's reason, if any (never a card number) */
  reason: string | null;
}

/**
 * The acquirer took the refund. `succeeded` / `failed`: its answer is the outcome (a gateway that
 * refunds at once); `pending`: the outcome follows by notification or ask. An unknown outcome
 * (timeout, 5xx, an unreadable answer) is never an answer: the connector throws a retryable
 * ProviderError and the refund is asked again with the same ids.
 */
export interface CardRefundAnswer extends ProviderAccepted {
  outcome: 'succeeded' | 'failed' | 'pending';
  /** our vocabulary's failure code (shared/providers/failureCodes.ts) when `failed` */
  failureCode: string | null;
  failureMessage: string | null;
}

export interface CardConnector extends ProviderEndpoint {
  readonly method: 'card';
  readonly capabilities: CardCapabilities;
  readonly origins: CardPageOrigins;
  readonly source: PaymentSourceRule;
  /** What the page needs to take the card (a gateway opens its session here); throws a ProviderError when it cannot. */
  cardForm(req: CardFormRequest): Promise<CardForm>;
  /** Charges the payment source once; a refusal of the source itself (not of the card) throws `sourceRefused`. */
  charge(req: ChargeRequest): Promise<ChargeAnswer>;
  /** Refunds all or part of a succeeded payment once; a refusal the acquirer will never take throws a permanent ProviderError. */
  refund(req: CardRefundRequest): Promise<CardRefundAnswer>;
  /** Stops timers and refreshes (the process is closing). */
  close?(): void;
}

/**
 * A refusal of the payment source, not of the card (a vault token expired or already used, a
 * gateway session that holds no card): the payment stays payable, its `checkout_error` is `code`,
 * and the client tries again on the page.
 */
export class SourceRefused extends ProviderError {
  constructor(code: string, message: string) {
    super(false, code, message);
  }
}

export const isCardConnector = (p: ProviderEndpoint): p is CardConnector =>
  (p as Partial<CardConnector>).method === 'card';
