/**
 * The introduction of the API reference (info.description of the OpenAPI document, Markdown):
 * how to authenticate, sign, retry and verify webhooks, with and without the SDK.
 */
export const API_DESCRIPTION = `
Collect mobile-money and card payments, refund them and pay out to mobile-money wallets in the
Democratic Republic of the Congo. Amounts are integers in minor units (\`2500\` USD is 25.00 USD).
Test keys (\`svc_test_…\`) use the sandbox operators; live keys (\`svc_live_…\`) move real money.

The quickest way in is the typed Node SDK (\`shared/client\` of the service's repository; the
README says how to install it): it signs, sets idempotency keys, retries, pages and verifies
webhooks for you.

\`\`\`ts
import { PaymentsApi } from '@svc/merchant-sdk';
const api = new PaymentsApi({ baseUrl, apiKey: process.env.API_KEY!, secret: process.env.API_SECRET! });
const payment = await api.payments.create({
  amount: 2500, currency: 'USD', method: 'mobile_money',
  operator: 'vodacom', phone: '243812345678', reference: 'order-1042',
});
for await (const p of api.payments.list({ status: 'succeeded' })) console.log(p.id);
\`\`\`

## Authentication

Every request carries the API key as a Bearer token: \`Authorization: Bearer svc_test_…\`.
A key has one scope: \`read\` (GET only), \`payments\` (read plus creating payments) or
\`full\` (everything, including refunds and payouts). A request that is not authenticated is
401 with \`WWW-Authenticate: Bearer realm="api"\`.

## Signing requests

POST, PUT, PATCH and DELETE must also be signed with the secret (\`sk_…\`, never sent):

1. \`timestamp\` = current Unix seconds, sent as \`X-Timestamp\` (refused beyond ±5 minutes).
2. \`payload\` = \`<timestamp>.<METHOD>.<path>.<raw body>\`, e.g.
   \`1767225600.POST./v1/payments.{"amount":2500,…}\`: the path without the query string, the
   body exactly as the bytes you send (serialise once, sign those bytes, send those bytes).
3. \`X-Signature\` = lowercase hex HMAC-SHA256 of \`payload\` keyed by the secret.

\`\`\`js
const crypto = require('node:crypto');
const body = JSON.stringify(payment);            // the exact bytes you send
const ts = String(Math.floor(Date.now() / 1000));
const sig = crypto.createHmac('sha256', secret).update(\`\${ts}.POST./v1/payments.\${body}\`).digest('hex');
await fetch(baseUrl + '/v1/payments', { method: 'POST', body, headers: {
  Authorization: \`Bearer \${apiKey}\`, 'Content-Type': 'application/json',
  'X-Timestamp': ts, 'X-Signature': sig, 'Idempotency-Key': crypto.randomUUID() } });
\`\`\`

## Idempotency and retries

\`POST /v1/payments\` and \`POST /v1/payouts\` take an \`Idempotency-Key\` (UUID v4; required on
payouts); refunds accept one. Sending the same key and body again within 24 hours returns the
first answer (\`Idempotent-Replayed: true\`) and never acts twice, so a request whose answer was
lost can always be retried with the same key. Retry, waiting \`Retry-After\` seconds, on
429 \`rate-limit-exceeded\` (100 requests a minute per key), 503 (\`maintenance\`,
\`service-unavailable\`) and 409 \`idempotency-in-progress\` (same key); never on other 4xx.
A signed POST sent twice without a key is refused with 409 \`request-replayed\`.
Answers counted against the rate limit carry \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and
\`X-RateLimit-Reset\` (Unix seconds when the minute's count starts again).

## Errors

Every error is \`{"error": {"code", "message", "param"?, "request_id"}}\` with the status of its
code; each operation below lists its codes. Every response carries \`X-Request-Id\`.

## Lists

Lists are newest first, cursor-paginated: \`{object: "list", data, has_more, next_cursor}\`;
pass \`next_cursor\` as \`cursor\` for the next page (\`limit\` 1 to 100, default 20).

## Webhooks

Events (\`payment.succeeded\`, \`payment.failed\`, \`payment.cancelled\`, \`refund.succeeded\`,
\`refund.failed\`, \`payout.succeeded\`, \`payout.failed\`, \`settlement.completed\`,
\`webhook.test\`) are POSTed to your endpoints as \`{id, type, created, data: {object, object_version}}\`
with the headers \`X-Service-Event\`, \`X-Service-Delivery-Id\` (the same across retries of one
delivery), \`X-Service-Delivery-Attempt\`, \`X-Service-Timestamp\` and
\`X-Service-Signature: t=<unix seconds>,v1=<hex>\`, and the Standard Webhooks headers
\`webhook-id\`, \`webhook-timestamp\`, \`webhook-signature\`.

To verify a delivery:

1. Read the **raw body bytes** before any JSON parsing (a re-serialised body never matches).
2. From \`X-Service-Signature\` take \`t\` and every \`v1\` (two during a secret rotation).
3. Compute the lowercase hex HMAC-SHA256 of \`<t>.<raw body>\` keyed by your webhook secret
   (\`whsec_…\`, the whole text) and compare it in constant time with each \`v1\`; accept if one matches.
4. Refuse when \`|now - t|\` exceeds 300 seconds.
5. Answer 2xx quickly; deduplicate on \`X-Service-Delivery-Id\`; ignore an event whose
   \`data.object_version\` is older than one you already applied.

\`\`\`ts
import { verifyWebhook } from '@svc/merchant-sdk';
app.post('/hooks', express.raw({ type: 'application/json' }), (req, res) => {
  const check = verifyWebhook(req.body, req.headers, process.env.WEBHOOK_SECRET!);
  if (!check.ok) return res.status(400).end();
  const event = JSON.parse(req.body.toString('utf8'));
  // … deduplicate on req.headers['x-service-delivery-id'], then apply
  res.status(204).end();
});
\`\`\`

The Standard Webhooks headers can also be checked with the \`standardwebhooks\` library
(\`new Webhook(secret).verify(rawBody, headers)\`). A delivery that gets no 2xx is retried after
1 s, 5 s, 30 s, 5 min, 30 min, 2 h and 6 h, then marked dead; missed events can be read back
from \`GET /v1/events\`.
`.trim();
