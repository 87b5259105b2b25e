// The probe script is run for real by /bin/sh on this machine (the SSH tests run it on sshd hosts).
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseProbe, probeScript, probeSummary } from './probe';
import type { HostProbe } from '../../common';

describe('probe', () => {
  it('describes this machine', () => {
    const out = execFileSync('/bin/sh', ['-c', probeScript('/tmp/cohort-probe-test')], { encoding: 'utf8' });
    const p = parseProbe('here', out);
    expect(p.ok).toBe(true);
    expect(p.cores).toBeGreaterThan(0);
    expect(p.memBytes).toBeGreaterThan(2 ** 30);
    expect(p.node?.version).toBe(process.version);
    expect(p.gpus).toEqual([]); // no GPU on the build machines
    expect(probeSummary(p)).toMatch(/CPU only/);
  });

  it("prints a Slurm login node's view under its host line (README: version, partitions, nodes, accounts, the workdir)", () => {
    const login: HostProbe = { host: 'login', ok: true, probedAt: '', gpus: [], tfjsNode: false, tfjsNodeGpu: false, os: 'Linux 6.1', arch: 'x86_64', cores: 8, node: { version: 'v20.19.0', path: '/usr/bin/node', ok: true } };
    const slurm = { version: 'slurm-wlm 22.05.8', partitions: [{ name: 'gpu', isDefault: true, avail: 'up', nodes: 4, idleNodes: 1, timeLimit: '2-00:00:00', gres: 'gpu:a100:4' }], nodes: [{ name: 'g1', state: 'mixed', cpus: 64, memMiB: 512000, gres: 'gpu:a100:4' }], workdirShared: 'no' as const, workdirNote: 'a compute node cannot read /home/me/w/.cohort-shared-1' };
    expect(probeSummary({ ...login, slurm: { ...slurm, accounts: ['proj1', 'proj2'] } }).split('\n').slice(1)).toEqual([
      '  Slurm 22.05.8',
      '  partition gpu (default): up, 1/4 node(s) idle, time limit 2-00:00:00, gres gpu:a100:4',
      '  node g1: mixed, 64 CPU(s), 512000 MiB, gres gpu:a100:4',
      '  accounts: proj1, proj2',
      '  workdir: NOT seen from the compute nodes: a compute node cannot read /home/me/w/.cohort-shared-1',
    ]);
    expect(probeSummary({ ...login, slurm: { ...slurm, accountsNote: 'accounts unknown: no accounting', workdirShared: 'yes', workdirNote: undefined, computeNode: 'node v20.19.0 · no-torch' } })).toMatch(/\n  accounts: unknown \(no accounting\)\n  workdir: seen from a compute node \(node v20\.19\.0 · no-torch\)$/);
    expect(probeSummary(login)).not.toContain('\n'); // an SSH host: one line
  });

  it('parses GPUs, CUDA and torch', () => {
    const p = parseProbe('gpu1', ['os=Linux 6.1', 'arch=x86_64', 'cores=64', 'mem=540000000000', 'node=/usr/bin/node|v20.11.0', 'gpu=0, NVIDIA A100-SXM4-80GB, 81920, 535.104.05', 'gpu=1, NVIDIA A100-SXM4-80GB, 81920, 535.104.05', 'cuda=12.2', 'python=/usr/bin/python3|3.10.12|2.3.0|True', 'probe=done'].join('\n'));
    expect(p.gpus).toHaveLength(2);
    expect(p.gpus[1]).toMatchObject({ index: 1, name: 'NVIDIA A100-SXM4-80GB', memoryBytes: 81920 * 2 ** 20, driver: '535.104.05', cuda: '12.2' });
    expect(p.torch).toEqual({ version: '2.3.0', cuda: true });
  });

  it('reads compute capability per GPU (asked apart: a pre-R510 driver rejects the field) and says where --bf16 runs natively', () => {
    // A fake nvidia-smi on PATH stands in for the driver (no GPU here); its answers are the real tool's formats.
    const root = mkdtempSync(join(tmpdir(), 'cohort-probe-smi-'));
    try {
      const smi = (body: string) => {
        writeFileSync(join(root, 'nvidia-smi'), `#!/bin/sh\n${body}\n`);
        chmodSync(join(root, 'nvidia-smi'), 0o755);
        const out = execFileSync('/bin/sh', ['-c', probeScript(join(root, 'wd'))], { encoding: 'utf8', env: { ...process.env, PATH: `${root}:${process.env.PATH}` } });
        return parseProbe('g1', out);
      };
      const mixed = smi(`case "$*" in
  *index,name,memory.total,driver_version*) printf '0, Tesla V100-SXM2-16GB, 16384, 535.104.05\\n1, NVIDIA A100-SXM4-40GB, 40960, 535.104.05\\n';;
  *index,compute_cap*) printf '0, 7.0\\n1, 8.0\\n';;
  *) echo '| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |';;
esac`);
      expect(mixed.gpus.map((g) => [g.name, g.computeCap])).toEqual([['Tesla V100-SXM2-16GB', '7.0'], ['NVIDIA A100-SXM4-40GB', '8.0']]);
      expect(probeSummary(mixed)).toMatch(/Tesla V100-SXM2-16GB 16 GiB cc 7\.0, NVIDIA A100-SXM4-40GB 40 GiB cc 8\.0 \(driver 535\.104\.05, CUDA 12\.2; no --bf16 on GPU 0 \(cc 7\.0\): needs compute capability ≥ 8\.0/);
      const old = smi(`case "$*" in
  *compute_cap*) echo 'Field "compute_cap" is not a valid field to query.' >&2; exit 2;;
  *index,name,memory.total,driver_version*) echo '0, Tesla V100-SXM2-16GB, 16384, 470.82.01';;
  *) echo '| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |';;
esac`);
      expect(old.gpus).toHaveLength(1);
      expect(old.gpus[0]!.computeCap).toBeUndefined();
      expect(probeSummary(old)).toMatch(/bf16 unknown \(driver does not report compute_cap\)/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('reports every Python found (profile, system, venvs under the workdir, conda) and picks a CUDA torch over a CPU torch', () => {
    // Fake interpreters: shell scripts answering the probe's question as a Python would.
    const root = mkdtempSync(join(tmpdir(), 'cohort-probe-py-'));
    try {
      const fake = (path: string, line: string) => {
        mkdirSync(join(path, '..'), { recursive: true });
        writeFileSync(path, `#!/bin/sh\necho '${line}'\n`);
        chmodSync(path, 0o755);
        return path;
      };
      const wd = join(root, 'wd');
      const cpu = fake(join(root, 'profile-py/bin/python'), '3.11.2|2.1.2|False||0');
      const venv = fake(join(wd, 'venv/bin/python'), '3.11.2|2.3.1+cu121|True|12.1|4');
      writeFileSync(join(wd, 'venv/pyvenv.cfg'), 'home = /usr/bin\n');
      const conda = fake(join(root, 'conda/bin/python'), '3.12.1||||');
      const out = execFileSync('/bin/sh', ['-c', probeScript(wd)], { encoding: 'utf8', env: { ...process.env, COHORT_PYTHON: cpu, CONDA_PREFIX: join(root, 'conda') } });
      const p = parseProbe('here', out);
      const mine = (p.pythons ?? []).filter((x) => x.path.startsWith(root));
      expect(mine).toEqual([
        { path: cpu, version: '3.11.2', torch: '2.1.2', cuda: false, gpus: 0 },
        { path: venv, version: '3.11.2', torch: '2.3.1+cu121', cuda: true, cudaVersion: '12.1', gpus: 4 },
        { path: conda, version: '3.12.1' },
      ]);
      expect(p.python?.path).toBe(venv);
      expect(p.torch).toEqual({ version: '2.3.1+cu121', cuda: true });
      expect(probeSummary(p)).toMatch(/torch 2\.3\.1\+cu121\+cuda \(.*venv\/bin\/python\) \[pythons: .*profile-py\/bin\/python torch 2\.1\.2 CPU; .*venv\/bin\/python torch 2\.3\.1\+cu121 CUDA 12\.1; .*conda\/bin\/python no torch/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it.skipIf(!existsSync('/usr/bin/python3'))('lists a venv whose python is a symlink to the system interpreter as its own (its own site-packages, its own torch)', () => {
    // A venv as `python3 -m venv` makes it; its torch is a stand-in module answering as a CUDA build (no GPU here).
    // Before: the probe dropped it as a duplicate of /usr/bin/python3 (same real file) and reported the system's torch.
    const root = mkdtempSync(join(tmpdir(), 'cohort-probe-venv-'));
    try {
      const ver = execFileSync('/usr/bin/python3', ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' }).trim();
      const venv = join(root, 'wd', 'venv');
      mkdirSync(join(venv, 'bin'), { recursive: true });
      writeFileSync(join(venv, 'pyvenv.cfg'), `home = /usr/bin\ninclude-system-site-packages = false\nversion = ${ver}\n`);
      symlinkSync('/usr/bin/python3', join(venv, 'bin', 'python'));
      const pkg = join(venv, 'lib', `python${ver}`, 'site-packages', 'torch');
      mkdirSync(pkg, { recursive: true });
      writeFileSync(join(pkg, '__init__.py'), '__version__ = "2.3.1+cu121"\nclass cuda:\n    is_available = staticmethod(lambda: True)\n    device_count = staticmethod(lambda: 4)\nclass version:\n    cuda = "12.1"\n');
      const out = execFileSync('/bin/sh', ['-c', probeScript(join(root, 'wd'))], { encoding: 'utf8', env: { ...process.env, COHORT_PYTHON: '' } });
      const p = parseProbe('here', out);
      const py = join(venv, 'bin', 'python');
      expect(p.pythons?.find((x) => x.path === py)).toEqual({ path: py, version: expect.stringMatching(/^\d+\.\d+\.\d+/), torch: '2.3.1+cu121', cuda: true, cudaVersion: '12.1', gpus: 4 });
      expect(p.pythons?.filter((x) => x.path === '/usr/bin/python3')).toHaveLength(1);
      expect(p.python?.path).toBe(py);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it.skipIf(!existsSync('/usr/bin/python3'))('reads a CPU-only torch from torch/version.py without importing it; a CUDA build is imported and asked', () => {
    // Stand-in torch packages on PYTHONPATH, each noting in a file when it is imported (an import is
    // 1.3–2 CPU-s a host for the real one). A CPU build has no GPU to find; a CUDA build must be asked.
    const root = mkdtempSync(join(tmpdir(), 'cohort-probe-torch-'));
    try {
      const imported = join(root, 'imported.log');
      const torchPackage = (dir: string, version: string, cuda: string | null): string => {
        mkdirSync(join(dir, 'torch'), { recursive: true });
        writeFileSync(join(dir, 'torch', 'version.py'), `__version__ = '${version}'\ndebug = False\ncuda = ${cuda === null ? 'None' : `'${cuda}'`}\nhip = None\n`);
        writeFileSync(
          join(dir, 'torch', '__init__.py'),
          `open(${JSON.stringify(imported)}, 'a').write('${version}\\n')\n__version__ = '${version}'\nclass cuda:\n    is_available = staticmethod(lambda: ${cuda === null ? 'False' : 'True'})\n    device_count = staticmethod(lambda: 2)\nclass version:\n    cuda = ${cuda === null ? 'None' : `'${cuda}'`}\n`,
        );
        return dir;
      };
      const probe = (pythonPath: string) => {
        const out = execFileSync('/bin/sh', ['-c', probeScript(join(root, 'wd'))], { encoding: 'utf8', env: { ...process.env, COHORT_PYTHON: '/usr/bin/python3', PYTHONPATH: pythonPath } });
        return parseProbe('here', out).pythons?.find((x) => x.path === '/usr/bin/python3');
      };
      const importedAs = () => (existsSync(imported) ? readFileSync(imported, 'utf8').split('\n').filter(Boolean) : []);
      expect(probe(torchPackage(join(root, 'cpu'), '2.4.0+cpu', null))).toEqual({ path: '/usr/bin/python3', version: expect.stringMatching(/^\d+\.\d+\.\d+/), torch: '2.4.0+cpu', cuda: false, gpus: 0 });
      expect(importedAs()).toEqual([]);
      expect(probe(torchPackage(join(root, 'cu'), '2.3.1+cu121', '12.1'))).toEqual({ path: '/usr/bin/python3', version: expect.stringMatching(/^\d+\.\d+\.\d+/), torch: '2.3.1+cu121', cuda: true, cudaVersion: '12.1', gpus: 2 });
      expect(importedAs()).toContain('2.3.1+cu121');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('explains a missing or old Node with the fix', () => {
    const missing = parseProbe('old', 'os=Linux\nprobe=done\n');
    expect(missing.ok).toBe(false);
    expect(missing.error?.code).toBe('node-missing');
    expect(missing.error?.hint).toMatch(/install Node\.js 20/);
    const old = parseProbe('old', 'node=/usr/bin/node|v18.19.0\nprobe=done\n');
    expect(old.error?.message).toMatch(/Node\.js v18\.19\.0 .* needs 20/);
  });
});
