import type { ProviderObjectKind } from '../types';

/**
 * The sandbox number table of decisions.md, as the sandbox provider plays it:
 *   243990000001 succeeds · 243990000002 fails `insufficient-funds` · 243990000003 fails
 *   `client-refused` (wrong PIN) · 243990000004 never answers · 243990000005 pays, but any
 *   refund or payout to it fails `recipient-inactive` · any other number succeeds.
 */

export type SandboxOutcome =
  | { status: 'succeeded' }
  | { status: 'failed'; failureCode: string; failureMessage: string }
  | { status: 'never' };

export function sandboxOutcome(kind: ProviderObjectKind, msisdn: string): SandboxOutcome {
  switch (msisdn) {
    case '243990000002':
      return kind === 'payment'
        ? { status: 'failed', failureCode: 'insufficient-funds', failureMessage: 'The client has insufficient funds' }
        : { status: 'succeeded' };
    case '243990000003':
      return kind === 'payment'
        ? { status: 'failed', failureCode: 'client-refused', failureMessage: 'The client refused the payment (wrong PIN)' }
        : { status: 'succeeded' };
    case '243990000004':
      return { status: 'never' };
    case '243990000005':
      return kind === 'payment'
        ? { status: 'succeeded' }
        : { status: 'failed', failureCode: 'recipient-inactive', failureMessage: 'The recipient number is inactive' };
    default:
      return { status: 'succeeded' };
  }
}
