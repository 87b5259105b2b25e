// The compute-node check's real command, run by /bin/sh here. The thin boundary: a stand-in `srun` on
// PATH that prints what srun prints on a busy partition (to stderr, which the check merges) and then
// runs the step's command, as srun would on a node.
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LoginShell } from './slurm-job';
import { workdirSeenByComputeNode } from './slurm-probe';

const root = mkdtempSync(join(tmpdir(), 'cohort-slurm-probe-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function shellWithSrun(srunBody: string): LoginShell {
  const bin = join(root, `bin-${Math.random().toString(36).slice(2)}`);
  mkdirSync(bin);
  writeFileSync(join(bin, 'srun'), `#!/bin/sh\n${srunBody}\nwhile [ "$1" != sh ]; do shift; done\nexec "$@"\n`);
  chmodSync(join(bin, 'srun'), 0o755);
  return {
    run: (command) =>
      new Promise((resolve) =>
        execFile('/bin/sh', ['-c', command], { env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` } }, (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      ),
  };
}

describe('workdirSeenByComputeNode', () => {
  it("reads its answers by key: srun's own lines before the step (a busy partition) do not make the workdir unseen", async () => {
    const shell = shellWithSrun('echo "srun: job 12 queued and waiting for resources" >&2; echo "srun: job 12 has been allocated resources" >&2');
    const r = await workdirSeenByComputeNode(shell, join(root, 'work'), 'pair');
    expect(r.workdirShared).toBe('yes');
    expect(r.computeNode).toMatch(new RegExp(`^node ${process.version.replace(/\./g, '\\.')} · (torch \\S+ \\(python3\\)|no torch on python3 )`));
  });

  it('a node that cannot read the marker: not shared, with what it said', async () => {
    // the step runs elsewhere and says what a node without the workdir says
    const hidden = shellWithSrun(`mkdir -p ${join(root, 'elsewhere')}; cd ${join(root, 'elsewhere')}; exec sh -c 'echo "seen=cat: cannot open marker"; echo node=no-node; echo torch=no-torch'`);
    const r = await workdirSeenByComputeNode(hidden, join(root, 'work2'), 'pair');
    expect(r.workdirShared).toBe('no');
    expect(r.workdirNote).toMatch(/a compute node cannot read .*\(cat: cannot open marker\)/);
  });
});
