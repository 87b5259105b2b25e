// Typechecks every layer with its own tsconfig, so a layer cannot use an environment
// (Node, DOM, electron) that it does not run in, and the renderer's .svelte components with
// svelte-check. See ARCHITECTURE.md "Layers".
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const projects = [
  'trainer/protocol/tsconfig.json',
  'electron/common/tsconfig.json',
  'trainer/tsconfig.json',
  'electron/core/tsconfig.json',
  'electron/main/tsconfig.json',
  'electron/preload/tsconfig.json',
  'renderer/tsconfig.json',
  'test/tsconfig.json',
].filter((p) => existsSync(p));

let failed = 0;
for (const project of projects) {
  const r = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], { stdio: 'inherit' });
  console.log(`typecheck ${project}: ${r.status === 0 ? 'ok' : 'FAILED'}`);
  if (r.status !== 0) failed++;
}
// tsc cannot read .svelte files; svelte-check typechecks them (and the renderer's .ts) against
// the same DOM-only tsconfig, and fails on Svelte's own warnings (accessibility, unused CSS) too.
{
  const r = spawnSync(process.execPath, ['node_modules/svelte-check/bin/svelte-check', '--tsconfig', 'renderer/tsconfig.json', '--fail-on-warnings', '--output', 'human'], { stdio: 'inherit' });
  console.log(`typecheck renderer .svelte (svelte-check): ${r.status === 0 ? 'ok' : 'FAILED'}`);
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
