import type { ErrorObject, ValidateFunction } from 'ajv';
import { ajv } from '../validation';

/** One way a document breaks a provider's schema: where ("/transaction/amount", "" for the whole) and what. */
export interface SchemaProblem {
  path: string;
  keyword: string;
  message: string;
}

const problemOf = (e: ErrorObject): SchemaProblem => {
  const child =
    (e.params as { additionalProperty?: string; missingProperty?: string }).additionalProperty ??
    (e.params as { missingProperty?: string }).missingProperty;
  return {
    path: child ? `${e.instancePath}/${child}` : e.instancePath,
    keyword: e.keyword,
    message: e.message ?? 'is invalid',
  };
};

/**
 * `check(name, data)` against a connector's schemas (its `schema/` folder), compiled once each with
 * the service's ajv (shared/validation.ts): the problems of `data`, empty when it conforms. The
 * connector checks what it sends and reads; its simulator refuses what the provider would.
 */
export function schemaChecker<N extends string>(
  schemas: Record<N, { $id: string }>,
): (name: N, data: unknown) => SchemaProblem[] {
  const compiled = new Map<N, ValidateFunction>();
  return (name, data) => {
    let v = compiled.get(name);
    if (!v) {
      const schema = schemas[name];
      v = (ajv.getSchema(schema.$id) as ValidateFunction | undefined) ?? ajv.compile(schema);
      compiled.set(name, v);
    }
    return v(data) ? [] : (v.errors ?? []).map(problemOf);
  };
}
