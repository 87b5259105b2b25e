// The renderer never imports Node built-ins: the Vite build refuses them (and electron), so the
// boundary cannot rot even in .svelte files that eslint and tsc do not see.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './serve-process';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function build(mainTs: string): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-layer-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'index.html'), '<!doctype html><script type="module" src="./main.ts"></script>');
  writeFileSync(join(dir, 'main.ts'), mainTs);
  const script = `import(${JSON.stringify(pathToFileURL(join(ROOT, 'scripts', 'build-renderer.mjs')).href)}).then((m) => m.buildRenderer({ rendererRoot: ${JSON.stringify(dir)}, outDir: ${JSON.stringify(join(dir, 'out'))}, logLevel: 'silent' }))`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  return { status: r.status, output: r.stdout + r.stderr };
}

describe('renderer build layer guard', () => {
  it('fails when renderer code imports a Node built-in', () => {
    const r = build("import { readFileSync } from 'node:fs';\nconsole.log(readFileSync);\n");
    expect(r.status).not.toBe(0);
    expect(r.output).toContain('must not import Node built-ins');
  });
  it('fails for bare built-in names and electron too', () => {
    expect(build("import path from 'path';\nconsole.log(path);\n").status).not.toBe(0);
    expect(build("import { ipcRenderer } from 'electron';\nconsole.log(ipcRenderer);\n").status).not.toBe(0);
  });
  it('builds plain browser code', () => {
    expect(build('document.title = "ok";\n').status).toBe(0);
  });
});
