import { Unprocessable } from '../errors';
import type { Currency, Direction, Environment, Operator } from '../vocabulary';
import { decimalsNeeded, minorToDecimal } from './amounts';
import type { CardConnector } from './cardConnector';
import type { AmountRule, Connector } from './connector';
import type { ProviderRegistry } from './registry';

/**
 * What a creation asks of the routing table (docs/decisions.md#live-providers), before anything is
 * written or sent: the connector that serves the operator's direction (422 operator-unavailable
 * when none does), or the card connector of the environment (422 method-unavailable when none
 * does), and that it can carry the amount (422 amount-not-supported, naming the rule).
 */
export function connectorFor(
  providers: Pick<ProviderRegistry, 'route'>,
  environment: Environment,
  operator: Operator,
  direction: Direction,
  currency: Currency,
  amount: number,
): Connector {
  const connector = providers.route(environment, operator, direction);
  if (!connector)
    throw new Unprocessable(
      'operator-unavailable',
      `No provider serves ${operator} ${direction}s for live keys (GET /v1/availability shows it closed)`,
      'operator',
    );
  refuseUncarriable(connector, operator, direction, currency, amount);
  return connector;
}

/** The card connector of a card payment's environment; 422 method-unavailable when none is routed (live keys without LIVE_CARD). */
export function cardConnectorFor(
  providers: Pick<ProviderRegistry, 'cardRoute'>,
  environment: Environment,
  currency: Currency,
  amount: number,
): CardConnector {
  const connector = providers.cardRoute(environment);
  if (!connector)
    throw new Unprocessable(
      'method-unavailable',
      'No card connector serves card payments for live keys (GET /v1/availability shows cards closed)',
      'method',
    );
  refuseAmount(connector.id, connector.capabilities.amountRule(currency), 'card', 'payment', currency, amount);
  return connector;
}

/** 422 amount-not-supported when the connector cannot carry `amount` (minor units) for this operator, direction and currency. */
export function refuseUncarriable(
  connector: Connector,
  operator: Operator,
  direction: Direction,
  currency: Currency,
  amount: number,
): void {
  refuseAmount(
    connector.id,
    connector.capabilities.amountRule(operator, currency, direction),
    operator,
    direction,
    currency,
    amount,
  );
}

/** 422 amount-not-supported unless `rule` carries `amount` of `currency` (`who` and `what`: whose rule, for the message). */
function refuseAmount(
  id: string,
  rule: AmountRule | undefined,
  who: string,
  what: string,
  currency: Currency,
  amount: number,
): void {
  const refuse = (why: string, param = 'amount') => {
    throw new Unprocessable('amount-not-supported', `${id} cannot carry this amount: ${why}`, param);
  };
  if (!rule) return refuse(`it takes no ${currency} for ${who} ${what}s`, 'currency');
  const shown = `${minorToDecimal(amount, currency)} ${currency}`;
  if (decimalsNeeded(amount, currency) > rule.decimals) {
    refuse(
      `${who} takes ${rule.decimals === 0 ? 'no decimals' : `at most ${rule.decimals} decimal${rule.decimals > 1 ? 's' : ''}`} in ${currency}, and ${shown} has more`,
    );
  }
  if (rule.min !== null && amount < rule.min)
    refuse(`${shown} is below its minimum of ${minorToDecimal(rule.min, currency)} ${currency} for ${who} ${what}s`);
  if (rule.max !== null && amount > rule.max)
    refuse(`${shown} is above its maximum of ${minorToDecimal(rule.max, currency)} ${currency} for ${who} ${what}s`);
}
