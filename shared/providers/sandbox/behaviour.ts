import type { ProviderObjectKind } from '../types';

/**
 * The sandbox number table of docs/decisions.md#sandbox-test-keys, as the sandbox provider plays it:
 *   243990000001 succeeds · 243990000002 fails `insufficient-funds` · 243990000003 fails
 *   `client-refused` (wrong PIN) · 243990000004 never answers · 243990000005 pays, but any
 *   refund or payout to it fails `recipient-inactive` · any other number succeeds.
 */

export type SandboxOutcome =
  { status: 'succeeded' } | { status: 'failed'; failureCode: string; failureMessage: string } | { status: 'never' };

const failed = (failureCode: string, failureMessage: string): SandboxOutcome => ({
  status: 'failed',
  failureCode,
  failureMessage,
});

export function sandboxOutcome(kind: ProviderObjectKind, msisdn: string): SandboxOutcome {
  const payment = kind === 'payment';
  if (msisdn === '243990000002' && payment) return failed('insufficient-funds', 'The client has insufficient funds');
  if (msisdn === '243990000003' && payment)
    return failed('client-refused', 'The client refused the payment (wrong PIN)');
  if (msisdn === '243990000004') return { status: 'never' };
  if (msisdn === '243990000005' && !payment) return failed('recipient-inactive', 'The recipient number is inactive');
  return { status: 'succeeded' };
}
