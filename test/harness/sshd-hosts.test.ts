// The harness's own guarantees: a run that is killed or exits without dispose() leaves nothing
// behind for long (the exit hook, or the next start's stale cleanup, removes it).
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupStale } from './netns';
import { harnessMode, leftovers } from './sshd-hosts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cohort-harness-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Starts hosts in a child process, which then ends the way `ending` says. Returns the cluster id. */
async function childRun(ending: 'exit' | 'hang'): Promise<{ id: string; exited: Promise<void>; kill: () => Promise<void> }> {
  const script = join(dir, `run-${ending}.mts`);
  const harness = new URL('./sshd-hosts.ts', import.meta.url).href;
  await writeFile(
    script,
    `import { startHosts } from ${JSON.stringify(harness)};
const c = await startHosts(2);
// A session process, as a test would leave one running on a host.
await c.exec(0, 'true');
process.stdout.write(c.id + '\\n');
${ending === 'exit' ? 'process.exit(1); // no dispose(): the exit hook must clean up' : 'setInterval(() => {}, 1000);'}
`,
  );
  const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const id = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`child exited with ${code} before starting hosts`)));
  });
  return {
    id,
    exited,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

describe('sshd harness cleanup', () => {
  it('the exit hook removes namespaces and processes when a run exits without dispose()', async () => {
    const run = await childRun('exit');
    await run.exited;
    expect(await leftovers(run.id)).toEqual({ namespaces: [], links: [], processes: [] });
  });

  it('a SIGKILLed run is cleaned up by the next start (stale registry entries)', async () => {
    const run = await childRun('hang');
    const before = await leftovers(run.id);
    if ((await harnessMode()) === 'netns') expect(before.namespaces).toHaveLength(2);
    expect(before.processes.length).toBeGreaterThanOrEqual(2); // the two sshd daemons
    await run.kill();
    expect(cleanupStale()).toContain(run.id);
    expect(await leftovers(run.id)).toEqual({ namespaces: [], links: [], processes: [] });
  });
});
