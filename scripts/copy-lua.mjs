// Lua scripts are read at runtime next to the module that loads them, so the build copies them into dist/.
import { cpSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.lua')) cpSync(path, join('dist', path));
  }
}
walk('src');
