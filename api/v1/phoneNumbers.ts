import { closedObject, component, defineRoutes, route } from '../routeTable';
import { lookupPhoneNumber, PhoneNumberProblem } from '../../shared/msisdn';
import { ValidationFailed } from '../../shared/errors';
import { OPERATORS } from '../../shared/vocabulary';
import { refuseQuery } from '../query';

/** The phone_number object (docs/decisions.md#integrators-kit). */
export const PhoneNumber = component(
  'PhoneNumber',
  closedObject({
    object: { const: 'phone_number' },
    input: { type: 'string', description: 'The number as given' },
    msisdn: { type: 'string', pattern: '^243[0-9]{9}$', description: 'The `phone` form: 243 and 9 digits' },
    operator: { type: 'string', enum: OPERATORS, description: 'The operator its prefix belongs to' },
  }),
);

/** Number lookup (docs/decisions.md#integrators-kit): what people type, as the MSISDN and its operator. */
export const phoneNumbersRoutes = defineRoutes([
  route({
    method: 'GET',
    path: '/phone-numbers/:number',
    operationId: 'lookupPhoneNumber',
    summary: 'Look up a phone number',
    description:
      'Normalises a number as people type it (`+243 81 234 5678`, `0812345678`, `00243812345678`; spaces, dots, dashes and brackets dropped) to the MSISDN form of `phone`, and names the operator of its prefix. 400 `validation-failed` (`param` `number`) when it cannot be a DRC mobile number.',
    tag: 'Phone numbers',
    scope: 'read',
    params: { number: { description: 'The number as typed (URL-encoded)' } },
    responses: { 200: { description: 'The number and its operator', body: PhoneNumber } },
    errors: ['validation-failed'],
    async handler(ctx) {
      refuseQuery(ctx.query);
      const input = ctx.params.number;
      try {
        const { msisdn, operator } = lookupPhoneNumber(input);
        ctx.body = { object: 'phone_number', input, msisdn, operator };
      } catch (err) {
        if (err instanceof PhoneNumberProblem) throw new ValidationFailed('number', err.message);
        throw err;
      }
    },
  }),
]);
