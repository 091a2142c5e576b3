// `npm run check:cycles`: fails on an import cycle between files (madge) or between modules, where a
// module is a folder under src/ (src/orders, src/inventory, ...) and each top-level src file is its own.
import madge from 'madge';

const roots = process.argv.slice(2);
const options = { fileExtensions: ['ts'], tsConfig: 'tsconfig.json' };

/** Cycles of a graph (node → its dependencies), each once, as found by a depth-first search. */
function cycles(graph) {
  const found = [];
  const state = new Map();
  const stack = [];
  const visit = (node) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph[node] ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of Object.keys(graph)) if (!state.has(node)) visit(node);
  return found;
}

/** The module of a file path relative to the madge root: its first folder, or the file itself. */
const moduleOf = (file) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : file);

let failed = false;
for (const root of roots) {
  const graph = (await madge(root, options)).obj();
  for (const cycle of cycles(graph)) {
    failed = true;
    console.error(`${root}: file cycle: ${cycle.join(' -> ')}`);
  }
  if (root !== 'src') continue;
  const modules = {};
  for (const [file, deps] of Object.entries(graph)) {
    const from = moduleOf(file);
    modules[from] ??= new Set();
    for (const dep of deps) if (moduleOf(dep) !== from) modules[from].add(moduleOf(dep));
  }
  const moduleGraph = Object.fromEntries(Object.entries(modules).map(([m, deps]) => [m, [...deps]]));
  for (const cycle of cycles(moduleGraph)) {
    failed = true;
    console.error(`src: module cycle: ${cycle.join(' -> ')}`);
  }
}
if (failed) process.exit(1);
console.log(`no import cycle in ${roots.join(', ')}`);
