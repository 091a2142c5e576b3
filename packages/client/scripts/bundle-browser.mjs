// The browser entry: dist/index.js with eventsource-parser bundled in (esbuild), one ES module a page
// imports as is, without a bundler or an import map. Node users get dist/index.js and the dependency.
import { build } from 'esbuild';

await build({
  entryPoints: ['dist/index.js'],
  outfile: 'dist/browser.js',
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  sourcemap: true,
  legalComments: 'inline',
  logLevel: 'warning',
});
