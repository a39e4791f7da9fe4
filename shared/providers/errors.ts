/**
 * Provider failures, classified once where they happen: a retryable one (timeout, network,
 * 5xx, 429, our own credentials refused) is worth another attempt later; a permanent one (the
 * provider refused this request) is final and carries the provider's failure code.
 */
export class ProviderError extends Error {
  constructor(
    readonly retryable: boolean,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = retryable ? 'ProviderRetryableError' : 'ProviderPermanentError';
  }
}

export const retryable = (code: string, message: string) => new ProviderError(true, code, message);
export const permanent = (code: string, message: string) => new ProviderError(false, code, message);

/** A verified callback whose body is not what the provider protocol says. */
export class CallbackFormatError extends Error {
  constructor(
    message: string,
    readonly notJson = false,
  ) {
    super(message);
  }
}
