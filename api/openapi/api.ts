import type { Caches } from '../../shared/ttlCache';
import type { RouteSpec } from '../routeTable';
import { buildOpenApi, type OpenApiDocument } from './document';

/** Tags in the order the reference page lists them, with their introductions. */
export const TAGS = [
  { name: 'Payments', description: 'Collect money by mobile money (a push prompt on the client\'s phone) or card (a hosted checkout page).' },
  { name: 'Refunds', description: 'Give a succeeded mobile-money payment back, whole or in part.' },
  { name: 'Payouts', description: 'Send money from your balance to a mobile-money wallet.' },
  { name: 'Balance and settlements', description: 'Your balance per currency and the daily settlement batches.' },
  { name: 'Events', description: 'Everything sent to your webhooks: read back what was missed, see each delivery, send an event again.' },
  { name: 'Operators', description: 'Which operators and directions are working now.' },
  { name: 'Phone numbers', description: 'What a client typed, as the `phone` to send and its operator.' },
  { name: 'Reference', description: 'This document.' },
];

/**
 * The document of these /v1 routes (api/v1 passes its route table: this module imports no
 * route). Without a server URL it is the document as committed (shared/client/openapi.json)
 * and as the SDK types are generated from.
 */
export function apiDocument(routes: readonly RouteSpec[], serverUrl?: string): OpenApiDocument {
  return buildOpenApi(routes, { prefix: '/v1', tags: TAGS, serverUrl });
}

/** The document GET /v1/openapi.json serves, as JSON text: this service's BASE_URL as its server (built once per process, in its caches). */
export function servedDocument(caches: Caches, baseUrl: string, routes: readonly RouteSpec[]): Promise<string> {
  return caches.ttl<string>('openapi-document', Infinity, 1).get(baseUrl, async () => JSON.stringify(apiDocument(routes, baseUrl)));
}
