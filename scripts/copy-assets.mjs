// Files the modules read at run time are not compiled by tsc, so the build copies them into dist/ next
// to the module that reads them: the .lua scripts, and the dashboard page (src/http/dashboard/).
import { cpSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';

const PAGE_DIR = join('src', 'http', 'dashboard') + sep;

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.lua') || path.startsWith(PAGE_DIR)) {
      mkdirSync(dirname(join('dist', path)), { recursive: true });
      cpSync(path, join('dist', path));
    }
  }
}
walk('src');
