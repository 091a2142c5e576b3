// The client's types, generated (openapi-typescript) from the OpenAPI document, so server, document
// and client cannot drift: writes packages/client/src/openapi.d.ts, or with --check fails when it is stale.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { openApiDocument } from '../src/http/openapi/document.ts';

const OUT = 'packages/client/src/openapi.d.ts';
const HEADER = [
  "// The types of the service's HTTP API, generated from its OpenAPI document (GET /openapi.json) by",
  '// `npm run gen:client-types`: do not edit. CI (`npm run check:client-types`) fails when it is stale.',
  '',
].join('\n');

const ast = await openapiTS(openApiDocument() as Parameters<typeof openapiTS>[0]);
const text = `${HEADER}${astToString(ast)}`;
if (process.argv.includes('--check')) {
  if (!existsSync(OUT) || readFileSync(OUT, 'utf8') !== text) {
    console.error(`${OUT} is stale: run npm run gen:client-types and commit it`);
    process.exit(1);
  }
  console.log(`${OUT} is up to date`);
} else {
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, text);
  console.log(`wrote ${OUT}`);
}
