#!/usr/bin/env node
// `npx flashsale …` / `flashsale …`: the admin CLI (src/cli.ts). In a checkout it runs the TypeScript
// source through tsx's loader (registered here and resolved from this package, so it works from any
// working directory); where tsx is not installed (production install) it runs the build,
// dist/src/cli.js (`npm run build`).
import { existsSync } from 'node:fs';

const source = new URL('../src/cli.ts', import.meta.url);
const built = new URL('../dist/src/cli.js', import.meta.url);

function fail(message) {
  process.stderr.write(`error: internal: ${message}\n`);
  process.exit(2);
}

async function load() {
  if (existsSync(source)) {
    let register;
    try {
      ({ register } = await import('tsx/esm/api'));
    } catch (err) {
      if (err?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
    }
    if (register) {
      register();
      return import(source.href);
    }
  }
  if (existsSync(built)) return import(built.href);
  return fail(
    'cannot run the CLI: tsx is not installed and there is no build (run npm install, or npm run build)',
  );
}

const cli = await load();
process.exitCode = await cli.main(process.argv.slice(2));
