/**
 * Our vocabulary of provider failures: the `failure_code` a payment, refund or payout shows,
 * whichever provider failed it. Each connector maps its provider's codes onto these (its table
 * sits in its folder, and docs list them); a code it does not know becomes `provider-failed`.
 */
export const FAILURE_CODES = {
  'insufficient-funds': 'The client has insufficient funds',
  'client-refused': 'The client refused the payment or entered a wrong PIN',
  'client-timeout': 'The client did not confirm in time',
  'payer-not-found': 'The phone number has no mobile-money wallet with this operator',
  'recipient-inactive': 'The recipient number is inactive or cannot receive money',
  'limit-reached': "The client's wallet limit was reached",
  'amount-out-of-bounds': 'The amount is outside what the provider accepts',
  'wallet-limited': "The client's wallet is limited or blocked",
  'operator-unavailable': 'The operator is unavailable',
  'card-declined': 'The card was declined',
  'expired-card': 'The card has expired',
  'authentication-failed': 'The client failed 3-D Secure authentication',
  'provider-refused': 'The provider refused the request',
  'provider-failed': 'The provider reported a failure',
} as const;

export type FailureCode = keyof typeof FAILURE_CODES;

export const failure = (code: FailureCode, message?: string) => ({
  failureCode: code,
  failureMessage: message ?? FAILURE_CODES[code],
});
