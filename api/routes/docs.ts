import { readFileSync } from 'node:fs';
import Router from '@koa/router';

/**
 * GET /docs: the API reference, rendered by Redoc's standalone bundle (served from node_modules,
 * never a CDN) from /v1/openapi.json. Its CSP allows only what Redoc needs: this origin, the
 * styles it injects, its blob: search worker and data: images.
 */

export const REDOC_BUNDLE = require.resolve('redoc/bundles/redoc.standalone.js');
export const DOCS_SCRIPT_PATH = '/docs/redoc.standalone.js';

export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'unsafe-inline'",
  'img-src data:',
  "connect-src 'self'",
  'worker-src blob:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Payments API reference</title>
<link rel="icon" href="data:,">
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="/v1/openapi.json" hide-download-button="false" expand-responses="200,201" path-in-middle-panel="true"></redoc>
<script src="${DOCS_SCRIPT_PATH}"></script>
</body>
</html>
`;

/** The bundle's footer logo comes from a CDN: served with an empty source, so the page never leaves this origin. */
const REDOCLY_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';

export const docsRouter = new Router()
  .get('/docs', (ctx) => {
    ctx.set('Content-Security-Policy', DOCS_CSP);
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  })
  .get(DOCS_SCRIPT_PATH, async (ctx) => {
    const bundle = await ctx.services.caches
      .ttl<string>('docs-bundle', Infinity, 1)
      .get('redoc', async () => readFileSync(REDOC_BUNDLE, 'utf8').replaceAll(`"${REDOCLY_LOGO}"`, '""'));
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.body = bundle;
  });
