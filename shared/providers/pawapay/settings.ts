import { oneOf, together, url, urlProtocols, type Env } from '../../env';

/** pawaPay Merchant API v2 (docs/going-live.md): one account and one callback URL for every operator it reaches. */
export interface PawapaySettings {
  url: string;
  apiToken: string;
  /** `required`: callbacks must carry pawaPay's RFC 9421 signature; `off`: the account signs none, each is confirmed by a status query */
  callbackSignatures: 'required' | 'off';
}

/** PAWAPAY_URL and PAWAPAY_API_TOKEN together (https in production); null: pawaPay is not configured. */
export function loadPawapaySettings(env: Env, production: boolean): PawapaySettings | null {
  if (!together(env, ['PAWAPAY_URL', 'PAWAPAY_API_TOKEN'])) return null;
  return {
    url: url(env, 'PAWAPAY_URL', '', urlProtocols(production)),
    apiToken: env.PAWAPAY_API_TOKEN!,
    callbackSignatures: oneOf(env, 'PAWAPAY_CALLBACK_SIGNATURES', ['required', 'off'] as const, 'required'),
  };
}
