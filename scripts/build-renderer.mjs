// Builds the Svelte dashboard (renderer/ → dist/renderer/) with Vite, and the Electron main and
// preload (electron/main, electron/preload → dist/electron/) with esbuild. The renderer build
// FAILS if any renderer file imports a Node built-in: the renderer runs in a sandboxed page.
//   node scripts/build-renderer.mjs            renderer + electron
//   node scripts/build-renderer.mjs renderer   renderer only
import { builtinModules } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const NODE = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** Vite plugin: refuse Node built-ins (and electron) imported from the renderer. */
export function noNodeBuiltins(rendererRoot) {
  return {
    name: 'cohort-no-node-builtins',
    enforce: 'pre',
    resolveId(id, importer) {
      const bare = id.startsWith('node:') ? id : id.split('/')[0];
      if (importer && (NODE.has(bare) || id.startsWith('node:') || bare === 'electron')) {
        throw new Error(`the renderer must not import Node built-ins or electron: "${id}" imported by ${relative(rendererRoot, importer)}. Ask core through the Api instead.`);
      }
      return null;
    },
  };
}

export async function buildRenderer({ rendererRoot = join(root, 'renderer'), outDir = join(root, 'dist', 'renderer'), logLevel = 'warn' } = {}) {
  const { build } = await import('vite');
  const { svelte } = await import('@sveltejs/vite-plugin-svelte');
  await build({
    root: rendererRoot,
    base: './',
    configFile: false,
    logLevel,
    plugins: [noNodeBuiltins(rendererRoot), svelte({ configFile: false })],
    build: { outDir, emptyOutDir: true, target: 'es2022', sourcemap: false, chunkSizeWarningLimit: 1000, modulePreload: { polyfill: false } },
  });
}

export async function buildElectron({ outDir = join(root, 'dist', 'electron') } = {}) {
  const { build } = await import('esbuild');
  const common = { bundle: true, platform: 'node', target: 'node22', external: ['electron'], logLevel: 'warning' };
  // Main is ESM (core uses import.meta.url); its npm dependencies stay external: node_modules ships with the app.
  await build({ ...common, format: 'esm', entryPoints: [join(root, 'electron', 'main', 'main.ts')], outfile: join(outDir, 'main.mjs'), packages: 'external' });
  // A sandboxed preload must be one CommonJS file that requires only 'electron'.
  await build({ ...common, format: 'cjs', entryPoints: [join(root, 'electron', 'preload', 'preload.ts')], outfile: join(outDir, 'preload.cjs') });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const what = process.argv[2] ?? 'all';
  await buildRenderer();
  if (what === 'all') await buildElectron();
  console.log(`built dist/renderer${what === 'all' ? ' and dist/electron' : ''}`);
}
