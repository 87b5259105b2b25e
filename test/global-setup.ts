// Multi-process tests run the built trainer bundle (the same file deploy ships to hosts), the
// built CLI and the built dashboard. Build them before the suite when any source is newer. Then
// serve the slow tier's CPU tokens for the run (test/cpu-lane.ts) and close them at its end.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { CPU_TOKENS, startCpuLane } from './cpu-lane';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The CPU-token server's socket (test/cpu-lane.ts); '' when there is none. */
    cpuLane: string;
  }
}

const root = join(import.meta.dirname, '..');

function newest(dir: string): number {
  let t = 0;
  if (!existsSync(dir)) return t;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  build();
  // The slow tier's CPU tokens (test/cpu-lane.ts): busy files take one, the waiting files do not.
  const lane = await startCpuLane(CPU_TOKENS);
  project.provide('cpuLane', lane.path);
  return () => lane.close();
}

function build(): void {
  const manifest = join(root, 'resources', 'trainer', 'manifest.json');
  const built = existsSync(manifest) ? statSync(manifest).mtimeMs : 0;
  const sources = Math.max(...['trainer', 'electron', 'renderer'].map((d) => newest(join(root, d))));
  if (sources <= built) return;
  try {
    execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { stdio: 'inherit', cwd: root });
    execFileSync(process.execPath, [join(root, 'scripts', 'build-renderer.mjs')], { stdio: 'inherit', cwd: root });
  } catch {
    // Unit tests do not need the bundle; the multi-process tests that do will fail with
    // "the trainer bundle is not built", next to the build error printed above.
    console.error('global-setup: building the trainer bundle failed (see above); tests that run ranks will fail');
  }
}
