// The node_modules a device kit needs: the packages the built CLI imports at run time (its bare
// top-level `import ... from "x"` lines: dist/cli.mjs is bundled with packages external; and the
// ones lazy-packages.ts requires on first use) and what they depend on,
// copied from the repository's node_modules. JavaScript only: native addons (*.node, build/ and the
// optional packages that exist only to compile one, like cpu-features) are left out, because
// they were compiled here for this machine; ssh2 then runs its pure-JS crypto, as it does wherever
// its addon did not build.
//
//   node scripts/device-kit-modules.mjs dist/cli.mjs REPO DEST_NODE_MODULES
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';

const [cli, repo, dest] = process.argv.slice(2);
if (!cli || !repo || !dest) {
  console.error('usage: node scripts/device-kit-modules.mjs dist/cli.mjs REPO DEST_NODE_MODULES');
  process.exit(2);
}
const builtins = new Set(builtinModules);
const bare = (spec) => !spec.startsWith('.') && !spec.startsWith('/') && !spec.startsWith('node:') && !builtins.has(spec.split('/')[0]);
const pkgName = (spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);

const source = readFileSync(cli, 'utf8');
const roots = new Set();
// esbuild writes an external package as a top-level `import ... from "x";` (or `import "x";`) line.
// Dynamic imports are left out on purpose: those are the optional bindings (tfjs-node) a host brings.
for (const m of source.matchAll(/^import\s+(?:[^"';]*?\s+from\s+)?["']([^"']+)["'];?\s*$/gm)) if (bare(m[1])) roots.add(pkgName(m[1]));
// ssh2 and ws are loaded on first use (electron/core/lazy-packages.ts: `requireHere("ssh2")`, a
// digit added if esbuild renamed it), not imported at the top; they go in as if they were.
for (const m of source.matchAll(/\brequireHere\d*\(\s*["']([^"']+)["']\s*\)/g)) if (bare(m[1])) roots.add(pkgName(m[1]));

/** The folder of package `name` as Node resolves it from `from` (a package folder or the repo). */
function locate(name, from) {
  for (let d = from; ; d = dirname(d)) {
    const p = join(d, 'node_modules', name);
    if (existsSync(join(p, 'package.json'))) return p;
    if (dirname(d) === d) return null;
  }
}

const version = (dir) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
const copied = new Map(); // name -> folder
const skipped = [];
const queue = [...roots].map((name) => ({ name, from: repo, optional: false, by: 'dist/cli.mjs' }));
while (queue.length) {
  const { name, from, optional, by } = queue.shift();
  const dir = locate(name, from);
  if (copied.has(name)) {
    // Copied flat: two versions of one package cannot both go in (none of the CLI's packages needs that today).
    if (dir && copied.get(name) !== dir && version(dir) !== version(copied.get(name))) {
      console.error(`device-kit: ${by} needs ${name} ${version(dir)} but ${version(copied.get(name))} is already in the kit; the flat copy cannot hold both`);
      process.exit(2);
    }
    continue;
  }
  if (!dir) {
    if (optional) {
      skipped.push(`${name} (optional for ${by}, not installed)`);
      continue;
    }
    console.error(`device-kit: ${by} needs ${name}, which is not installed under ${repo}/node_modules: run npm install there`);
    process.exit(2);
  }
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const native = existsSync(join(dir, 'binding.gyp'));
  if (native && optional) {
    skipped.push(`${name} (optional native addon of ${by})`);
    continue;
  }
  copied.set(name, dir);
  for (const dep of Object.keys(pkg.dependencies ?? {})) queue.push({ name: dep, from: dir, optional: false, by: name });
  for (const dep of Object.keys(pkg.optionalDependencies ?? {})) queue.push({ name: dep, from: dir, optional: true, by: name });
}

for (const [name, dir] of copied) {
  const to = join(dest, name);
  mkdirSync(dirname(to), { recursive: true });
  // Compiled addons stay behind; so do a package's own node_modules (its dependencies are copied flat).
  cpSync(dir, to, { recursive: true, dereference: true, filter: (src) => !/\.node$|\/build$|\/node_modules$/.test(src.slice(dir.length)) });
}
console.log(`device-kit: node_modules: ${[...copied.keys()].sort().join(', ')}${skipped.length ? `; left out: ${skipped.join(', ')}` : ''}`);
