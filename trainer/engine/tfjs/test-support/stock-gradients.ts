// Test support: registers tfjs-core's stock gradient functions, the reference every hand-written
// gradient here is checked against. tfjs-core's Node entry (CJS) ships no gradients and its ESM
// registration module cannot be imported by Node directly (extensionless and directory imports),
// so it is bundled once with esbuild into a temp file. The kernel and gradient registries and
// the engine live on tfjs's global namespace, so the bundled copy registers into the same ones.
import { build } from 'esbuild';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

let loaded: Promise<void> | null = null;

export function registerStockGradients(): Promise<void> {
  loaded ??= (async () => {
    const entry = createRequire(import.meta.url).resolve('@tensorflow/tfjs-core/dist/register_all_gradients.js');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cohort-tfjs-grads-'));
    try {
      const out = path.join(dir, 'register-all-gradients.mjs');
      await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'node', outfile: out, logLevel: 'error' });
      await import(pathToFileURL(out).href);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  })();
  return loaded;
}
