import Ajv, { type ErrorObject, type JSONSchemaType, type Schema } from 'ajv';
import addFormats from 'ajv-formats';
import { ValidationFailed } from './errors';
import { MAX_AMOUNT } from './money';

/**
 * Request validation: one ajv instance; schemas sit next to their routes and are also the
 * source of the API description. A failure becomes 400 `validation-failed` naming the field.
 */
export const ajv = new Ajv({ allErrors: false, strict: true, coerceTypes: false, useDefaults: false });
addFormats(ajv);

/** Anything wrong inside metadata names `metadata` (docs/decisions.md#metadata-keys): its keys are the merchant's text, never echoed. */
function paramOf(err: ErrorObject): string {
  const base = err.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (base === 'metadata' || base.startsWith('metadata.')) return 'metadata';
  const child =
    (err.params as { missingProperty?: string }).missingProperty ??
    (err.params as { additionalProperty?: string }).additionalProperty;
  if (child) return base ? `${base}.${child}` : child;
  return base || 'body';
}

function messageOf(err: ErrorObject, param: string): string {
  // a key broke the object's propertyNames rule (ajv reports the key, not a path to it)
  if (err.propertyName !== undefined) {
    const chars = [...err.propertyName].length;
    if (err.keyword === 'maxLength' || err.keyword === 'minLength') {
      const { limit } = err.params as { limit: number };
      return err.keyword === 'maxLength'
        ? `${param} keys must be at most ${limit} characters (got a key of ${chars})`
        : `${param} keys must be at least ${limit} character${limit === 1 ? '' : 's'} long`;
    }
    return `${param} has an invalid key: ${err.message ?? 'is invalid'}`;
  }
  if (err.keyword === 'required') return `${param} is required`;
  if (err.keyword === 'additionalProperties') return `${param} is not a known field`;
  if (err.keyword === 'enum')
    return `${param} must be one of: ${(err.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
  return `${param} ${err.message ?? 'is invalid'}`;
}

export type Validator<T> = (data: unknown) => T;

export function validator<T>(schema: Schema | JSONSchemaType<T>): Validator<T> {
  const validate = ajv.compile<T>(schema);
  return (data: unknown): T => {
    if (data === null || typeof data !== 'object' || Array.isArray(data)) {
      throw new ValidationFailed('body', 'the body must be a JSON object');
    }
    if (!validate(data)) {
      const err = validate.errors![0];
      const param = paramOf(err);
      throw new ValidationFailed(param, messageOf(err, param));
    }
    return data;
  };
}

/** A positive amount in minor units, at most 10^12 (docs/decisions.md#payments: 400 validation-failed beyond). */
export const MONEY = { type: 'integer', minimum: 1, maximum: MAX_AMOUNT } as const;
