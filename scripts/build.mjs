// Builds what runs outside the repo's TypeScript sources:
//   resources/trainer/  the trainer bundle deployed to hosts: cohort-trainer.mjs (agent + ranks,
//                       tfjs and the collectives inside) and its chunks (*-HASH.mjs, one per
//                       host command and shared ones), wasm/ (tfjs wasm binaries), engines/ (the
//                       PyTorch engine script and train-config.json, its defaults from the
//                       run-configuration table) and manifest.json (content hash for deploy)
//   dist/cli.mjs        the `cohort` CLI (bin/cohort.mjs loads it)
// The renderer (Svelte) has its own Vite build.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';

const root = dirname(dirname(new URL(import.meta.url).pathname));
const require = createRequire(import.meta.url);
const out = join(root, 'resources', 'trainer');
// An ESM bundle of CommonJS packages needs a real `require` for Node built-ins.
// CommonJS code inside also expects __dirname/__filename (tfjs-backend-wasm locates its .wasm with them).
const banner = {
  js: [
    "import { createRequire as __cohortRequire } from 'node:module';",
    "import { fileURLToPath as __cohortFileURLToPath } from 'node:url';",
    "import { dirname as __cohortDirname } from 'node:path';",
    'const require = __cohortRequire(import.meta.url);',
    'const __filename = __cohortFileURLToPath(import.meta.url);',
    'const __dirname = __cohortDirname(__filename);',
  ].join(' '),
};

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'wasm'), { recursive: true });
// Split into chunks beside the entry: each host command imports its own code when it runs
// (trainer/main.ts), and with one 2.2-MB file every short command (run-follow, run-status,
// check-*, several per run and per dashboard poll) parsed tfjs and the engine first: ~0.20 CPU-s
// a start against ~0.10 split (session 10). Deploy uploads every file of the manifest, so the
// chunks travel with the entry; they stay in this folder (import.meta.url-relative paths and the
// banner's __dirname mean the same folder in every chunk).
await build({
  entryPoints: { 'cohort-trainer': join(root, 'trainer', 'main.ts') },
  outdir: out,
  outExtension: { '.js': '.mjs' },
  splitting: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  banner,
  // Loaded at run time from the host's own install when present (their install downloads libtensorflow).
  external: ['@tensorflow/tfjs-node', '@tensorflow/tfjs-node-gpu'],
  logLevel: 'warning',
  legalComments: 'none',
});
// The rank apart, as one CommonJS file: trainer/main.ts compiles it with V8's code cache
// (trainer/util/code-cache.ts: Node 20 caches bytecode only for vm.Script, not for ES modules). It
// must not use import(): a vm.Script has no module loader behind it (tfjs-node is loaded with require).
await build({
  entryPoints: [join(root, 'trainer', 'train', 'rank.ts')],
  outfile: join(out, 'rank.cjs'),
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // tfjs-backend-wasm's CommonJS build finds its .wasm by __dirname; the engine's own import.meta.url (package lookup) gets this file's URL.
  banner: { js: "const __cohortImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  define: { 'import.meta.url': '__cohortImportMetaUrl' },
  external: ['@tensorflow/tfjs-node', '@tensorflow/tfjs-node-gpu'],
  logLevel: 'warning',
  legalComments: 'none',
});
if (/[^\w.$]import\(/.test(readFileSync(join(out, 'rank.cjs'), 'utf8'))) throw new Error('rank.cjs calls import(): a vm.Script cannot (trainer/util/code-cache.ts); load CommonJS with require');
const wasmDist = join(dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist');
// Not the threaded build: tfjs-backend-wasm never picks it under Node (WASM_HAS_MULTITHREAD_SUPPORT is
// false when IS_NODE), so it was 435 KB of every deploy to every host that no rank loads. The ranks
// load the plain and the SIMD build (WASM_FILES, trainer/engine/tfjs/backend.ts).
for (const f of readdirSync(wasmDist).filter((f) => f.endsWith('.wasm') && !f.includes('threaded'))) copyFileSync(join(wasmDist, f), join(out, 'wasm', f));
// The PyTorch engine (trainer/engine/torch: torch_engine.py and its package), Python sources only.
copyPython(join(root, 'trainer', 'engine', 'torch'), join(out, 'engines'));
// The torch engine's run-configuration defaults, from the one table in trainer/protocol.
mkdirSync(join(out, 'engines'), { recursive: true });
writeFileSync(join(out, 'engines', 'train-config.json'), JSON.stringify(await torchEngineConfig(), null, 2) + '\n');
writeFileSync(join(out, 'manifest.json'), JSON.stringify(manifest(out), null, 2) + '\n');

await build({
  entryPoints: [join(root, 'electron', 'cli', 'main.ts')],
  outfile: join(root, 'dist', 'cli.mjs'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  banner,
  packages: 'external', // the CLI runs from the installed package, next to its node_modules
  define: { __COHORT_VERSION__: JSON.stringify(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version) },
  logLevel: 'warning',
});
console.log(`built ${relative(root, out)} (${manifest(out).hash.slice(0, 12)}) and dist/cli.mjs`);

/** trainer/protocol/train-config.ts's torchEngineConfigJson(), evaluated (bundled in memory: the table is TypeScript). */
async function torchEngineConfig() {
  const r = await build({ entryPoints: [join(root, 'trainer', 'protocol', 'train-config.ts')], bundle: true, write: false, format: 'esm', platform: 'neutral', logLevel: 'warning' });
  const mod = await import('data:text/javascript;base64,' + Buffer.from(r.outputFiles[0].text).toString('base64'));
  return mod.torchEngineConfigJson();
}

/** Copies the .py files under `from` (no __pycache__) to `to`, keeping the folder structure. */
function copyPython(from, to) {
  if (!existsSync(from)) return;
  for (const e of readdirSync(from, { withFileTypes: true })) {
    if (e.isDirectory()) {
      if (e.name !== '__pycache__') copyPython(join(from, e.name), join(to, e.name));
    } else if (e.name.endsWith('.py')) {
      mkdirSync(to, { recursive: true });
      copyFileSync(join(from, e.name), join(to, e.name));
    }
  }
}

/** Files with sha256 each, and one hash over all of them: the deploy cache key. */
function manifest(dir) {
  const files = [];
  const walk = (d) => {
    for (const f of readdirSync(d).sort()) {
      const p = join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (f !== 'manifest.json') files.push({ path: relative(dir, p), bytes: statSync(p).size, sha256: createHash('sha256').update(readFileSync(p)).digest('hex') });
    }
  };
  walk(dir);
  const hash = createHash('sha256').update(files.map((f) => `${f.path}\0${f.sha256}`).join('\n')).digest('hex');
  return { hash, files };
}
