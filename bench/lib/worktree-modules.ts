// node_modules for a temporary worktree of another commit (bench:compare): every package is a link
// to this checkout's installed one, except the workspace packages (packages/*), which link to the
// worktree's own and are built there, so that the other commit runs its own lock package and not the
// build that this checkout's node_modules happens to point at.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';

/** The workspace packages of a tree: name → folder (packages/* with a package.json). */
function workspaces(root: string): Map<string, string> {
  const found = new Map<string, string>();
  const dir = join(root, 'packages');
  if (!existsSync(dir)) return found;
  for (const entry of readdirSync(dir)) {
    const manifest = join(dir, entry, 'package.json');
    if (existsSync(manifest))
      found.set(JSON.parse(readFileSync(manifest, 'utf8')).name as string, join(dir, entry));
  }
  return found;
}

/** Fills `tree`/node_modules from `from`/node_modules, the workspace packages from `tree` (built). */
export function linkModules(from: string, tree: string): void {
  const source = realpathSync(join(from, 'node_modules'));
  const target = join(tree, 'node_modules');
  const own = workspaces(tree);
  mkdirSync(target, { recursive: true });
  for (const entry of readdirSync(source)) {
    if (!entry.startsWith('@')) {
      if (!own.has(entry)) symlinkSync(realpathSync(join(source, entry)), join(target, entry));
      continue;
    }
    mkdirSync(join(target, entry), { recursive: true });
    for (const pkg of readdirSync(join(source, entry))) {
      const name = `${entry}/${pkg}`;
      if (!own.has(name)) symlinkSync(realpathSync(join(source, name)), join(target, name));
    }
  }
  for (const [name, dir] of own) {
    const link = join(target, name);
    if (!existsSync(link)) symlinkSync(dir, link);
    // Its exports point at dist/: build it with its own build script.
    execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: 'ignore' });
  }
}

/** Where this checkout's workspace packages resolve, when that is not its own packages/ folder. */
export function foreignWorkspaces(root: string): string[] {
  const out: string[] = [];
  for (const [name, dir] of workspaces(root)) {
    const link = join(root, 'node_modules', name);
    if (existsSync(link) && realpathSync(link) !== realpathSync(dir))
      out.push(`${name} resolves to ${realpathSync(link)}, not ${dir}`);
  }
  return out;
}
