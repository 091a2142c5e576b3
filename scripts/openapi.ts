// Writes the OpenAPI document (src/http/openapi/document.ts) to a file, for `npm run lint:openapi`
// (redocly lint) and `npm run gen:client-types` (openapi-typescript). Usage: tsx scripts/openapi.ts <out.json>
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { openApiDocument } from '../src/http/openapi/document.ts';

const out = process.argv[2];
if (!out) {
  console.error('usage: tsx scripts/openapi.ts <out.json>');
  process.exit(2);
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(openApiDocument(), null, 2)}\n`);
