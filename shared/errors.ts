/**
 * Typed errors thrown by domain and route code; one middleware (api/middleware/errors.ts) turns
 * them into the error body of decisions.md. No handler builds an error body by hand.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (code: string, message: string, param?: string) => new ApiError(400, code, message, param);
export const validationFailed = (param: string, message: string) => new ApiError(400, 'validation-failed', message, param);
export const notFound = (what = 'Resource') => new ApiError(404, 'not-found', `${what} not found`);
export const conflict = (code: string, message: string, headers?: Record<string, string>) =>
  new ApiError(409, code, message, undefined, headers);
export const unprocessable = (code: string, message: string, param?: string) => new ApiError(422, code, message, param);
export const forbidden = (code: string, message: string) => new ApiError(403, code, message);
