// Files the modules read at run time are not compiled by tsc, so the build copies them into dist/ next
// to the module that reads them: the .lua scripts, the dashboard page (src/http/dashboard/) and the
// buyers' waiting page (src/http/shop/).
import { cpSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';

const PAGE_DIRS = ['dashboard', 'shop'].map((page) => join('src', 'http', page) + sep);

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.lua') || PAGE_DIRS.some((dir) => path.startsWith(dir))) {
      mkdirSync(dirname(join('dist', path)), { recursive: true });
      cpSync(path, join('dist', path));
    }
  }
}
walk('src');
