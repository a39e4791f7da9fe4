import Router from '@koa/router';
import { lookupPhoneNumber, PhoneNumberProblem } from '../../shared/domain/msisdn';
import { validationFailed } from '../../shared/errors';
import { refuseQuery } from '../query';

/** Number lookup (decisions.md "Integrator's kit"): what people type, as the MSISDN and its operator. */
export const phoneNumbersRouter = new Router().get('/phone-numbers/:number', async (ctx) => {
  refuseQuery(ctx.query);
  const input = ctx.params.number;
  try {
    const { msisdn, operator } = lookupPhoneNumber(input);
    ctx.body = { object: 'phone_number', input, msisdn, operator };
  } catch (err) {
    if (err instanceof PhoneNumberProblem) throw validationFailed('number', err.message);
    throw err;
  }
});
