/**
 * `npm run openapi [-- <file>]`: writes the OpenAPI document of the merchant API (built from the
 * route table, api/openapi) to shared/client/openapi.json (or <file>), and the SDK's types
 * generated from it by openapi-typescript to shared/client/apiTypes.ts. Both are committed;
 * test/unit/openapi.test.ts fails while either is stale. Needs no database, Redis or config.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderDocument, renderTypes, DOCUMENT_FILE, TYPES_FILE } from '../api/openapi/files';

async function main() {
  const docFile = resolve(process.argv[2] ?? DOCUMENT_FILE);
  writeFileSync(docFile, renderDocument());
  writeFileSync(TYPES_FILE, await renderTypes());
  process.stdout.write(`wrote ${docFile} and ${TYPES_FILE}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
