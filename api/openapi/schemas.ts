import { closedObject, component, type Component, type JsonSchema } from '../routeTable';
import { CURRENCIES, ENVIRONMENTS } from '../../shared/vocabulary';
import { ID_PREFIX, type IdKind } from '../../shared/ids';
import { ERROR_CODES } from './errors';

/**
 * Building blocks of the response schemas (JSON Schema 2020-12, as OpenAPI 3.1 reads it). The
 * objects themselves are declared next to their routes (api/v1/*.ts).
 */

export const nullable = (schema: JsonSchema): JsonSchema =>
  typeof schema.type === 'string' ? { ...schema, type: [schema.type, 'null'] } : { anyOf: [schema, { type: 'null' }] };

export const UNIX_SECONDS: JsonSchema = { type: 'integer', description: 'Unix seconds' };
export const MINOR_UNITS: JsonSchema = {
  type: 'integer',
  description: 'Minor units of the currency (cents, centimes)',
};
export const CURRENCY: JsonSchema = { type: 'string', enum: CURRENCIES };
export const ENVIRONMENT: JsonSchema = { type: 'string', enum: ENVIRONMENTS };

/** An object id: `<prefix><uuid v4>` (docs/decisions.md#names). */
export const idOf = (kind: IdKind, description?: string): JsonSchema => ({
  type: 'string',
  pattern: `^${ID_PREFIX[kind]}[0-9a-f-]{36}$`,
  ...(description ? { description } : {}),
});

/** `{object: "list", data, has_more, next_cursor}`: a cursor-paginated list (docs/decisions.md#cursor). */
export const pageOf = (name: string, item: Component): Component =>
  component(
    name,
    closedObject({
      object: { const: 'list' },
      data: { type: 'array', items: item },
      has_more: { type: 'boolean' },
      next_cursor: {
        type: ['string', 'null'],
        description: 'Pass as `cursor` to get the next page; null on the last page',
      },
    }),
  );

/** `{object: "list", data}`: a whole, unpaginated list. */
export const listOf = (name: string, item: Component): Component =>
  component(name, closedObject({ object: { const: 'list' }, data: { type: 'array', items: item } }));

/** The error body of docs/decisions.md#errors, the same for every status. */
export const ErrorBody = component(
  'Error',
  closedObject({
    error: closedObject(
      {
        code: {
          type: 'string',
          enum: Object.keys(ERROR_CODES),
          description: 'Stable, machine-readable code (each response lists those it may carry)',
        },
        message: { type: 'string', description: 'Human text; may change' },
        param: { type: 'string', description: 'The field at fault, where one is' },
        request_id: { type: 'string', description: 'Also in the X-Request-Id header; quote it to support' },
      },
      ['param'],
    ),
  }),
);

/** Metadata as echoed: the keys and values the merchant sent. */
export const METADATA: JsonSchema = {
  type: 'object',
  additionalProperties: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] },
};
