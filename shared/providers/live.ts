import type { Config, LiveConnectorName } from '../config';
import type { HttpClient } from '../httpClient';
import type { Logger } from '../logger';
import type { Connector } from './connector';
import { AirtelConnector } from './airtel/connector';
import { PawapayConnector } from './pawapay/connector';

/** What every live connector is built with beside its own settings. */
export interface ConnectorCommon {
  timeoutMs: number;
  client: HttpClient;
  /** where the provider must send its callbacks: {BASE_URL}/callbacks/{connector} */
  callbackUrl: string;
  log?: Logger;
}

/**
 * The live connectors, one table entry each: built from its settings when they are configured
 * (shared/config.ts), else null. A new connector is a folder in shared/providers and a line here.
 */
export const LIVE_CONNECTOR_FACTORIES: Record<
  LiveConnectorName,
  (config: Config, common: ConnectorCommon) => Connector | null
> = {
  pawapay: ({ payments: { live } }, common) =>
    live.pawapay &&
    new PawapayConnector({
      environment: 'live',
      baseUrl: live.pawapay.url,
      apiToken: live.pawapay.apiToken,
      callbackSignatures: live.pawapay.callbackSignatures,
      // its signature covers the URL it posted to: the one registered with pawaPay
      callbackUrl: common.callbackUrl,
      timeoutMs: common.timeoutMs,
      client: common.client,
      log: common.log,
    }),
  airtel: ({ payments: { live } }, common) =>
    live.airtel &&
    new AirtelConnector({
      environment: 'live',
      baseUrl: live.airtel.url,
      clientId: live.airtel.clientId,
      clientSecret: live.airtel.clientSecret,
      country: live.airtel.country,
      disbursementPin: live.airtel.disbursementPin ?? undefined,
      pinPublicKeyPem: live.airtel.pinPublicKey ?? undefined,
      pinPadding: live.airtel.pinPadding ?? undefined,
      callbackHashSecret: live.airtel.callbackHashSecret ?? undefined,
      callbackHashOver: live.airtel.callbackHashOver,
      disbursementVersion: live.airtel.disbursementVersion,
      idFormat: live.airtel.idFormat,
      amountRules: live.airtel.amountLimits,
      timeoutMs: common.timeoutMs,
      client: common.client,
      log: common.log,
    }),
};
