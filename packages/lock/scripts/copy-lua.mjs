// Build step: the .lua scripts are read at run time next to the module that loads them, and tsc does
// not copy them, so they are copied from src/ into dist/ keeping their folders.
import { cpSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.lua')) {
      const target = join(root, 'dist', relative(join(root, 'src'), path));
      mkdirSync(dirname(target), { recursive: true });
      cpSync(path, target);
    }
  }
}
walk(join(root, 'src'));
