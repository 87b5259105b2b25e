// The thin boundary: fake interpreters (small shell scripts printing what a Python would answer to
// the engine choice's query). Discovery, de-duplication, preference and the reason are the real code.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chooseEngine, cpuTorchImportNeeded, findPythons, pickPython, pythonCandidates } from './engine-choice';

const root = mkdtempSync(join(tmpdir(), 'cohort-pythons-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function fakePython(path: string, answer: object | string): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `#!/bin/sh\necho '${typeof answer === 'string' ? answer : JSON.stringify(answer)}'\n`);
  chmodSync(path, 0o755);
  return path;
}

const debianCpu = fakePython(join(root, 'usr/bin/python3'), { version: '3.11.2', torch: '2.1.2', cuda: false, cudaVersion: '', gpus: 0 });
const workdir = join(root, 'wd');
const venvCuda = fakePython(join(workdir, 'venv/bin/python'), { version: '3.11.2', torch: '2.3.1+cu121', cuda: true, cudaVersion: '12.1', gpus: 4 });
writeFileSync(join(workdir, 'venv/pyvenv.cfg'), 'home = /usr/bin\n');
const condaEnvInWorkdir = fakePython(join(workdir, 'conda-env/bin/python'), { version: '3.10.14', error: 'ModuleNotFoundError: No module named torch' });
const condaNoTorch = fakePython(join(root, 'home/miniconda3/bin/python'), { version: '3.12.1', error: 'ModuleNotFoundError: No module named torch' });
const broken = fakePython(join(root, 'weird/python'), 'Segmentation fault');

describe('python discovery and choice', () => {
  it('candidates include the system, PATH, venvs under the workdir and conda; COHORT_PYTHON alone when set', () => {
    const c = pythonCandidates({ HOME: join(root, 'home') }, workdir);
    expect(c.slice(0, 3)).toEqual(['/usr/bin/python3', 'python3', 'python']);
    expect(c).toContain(venvCuda);
    expect(c).toContain(condaEnvInWorkdir); // no pyvenv.cfg: a conda env; `cohort probe` lists it too
    expect(c).toContain(condaNoTorch);
    expect(pythonCandidates({ COHORT_PYTHON: '/opt/py/bin/python', HOME: root }, workdir)).toEqual(['/opt/py/bin/python']);
  });

  it('a CUDA torch in a venv wins over the CPU torch found first, and the reason lists every interpreter', async () => {
    const found = await findPythons([debianCpu, join(root, 'missing/python'), venvCuda, condaNoTorch, broken, debianCpu]);
    expect(found.map((p) => p.python)).toEqual([debianCpu, venvCuda, condaNoTorch, broken]); // missing left out, duplicate once
    const { chosen, explanation } = pickPython(found);
    expect(chosen?.python).toBe(venvCuda);
    expect(explanation).toBe(
      `${venvCuda} (torch 2.3.1+cu121, CUDA 12.1, 4 GPU(s)); also found: ${debianCpu} (torch 2.1.2, CPU only); ${condaNoTorch} (Python 3.12.1, no torch: ModuleNotFoundError: No module named torch); ${broken} (Python ?, no torch: unexpected output: Segmentation fault)`,
    );
    // CPU torch only: it is used, and said to be CPU
    expect(pickPython(found.filter((p) => p.python !== venvCuda)).chosen?.python).toBe(debianCpu);
    expect(pickPython([found[2]!]).chosen).toBeUndefined();
  });

  it('auto picks torch with CUDA from the venv; the profile python (COHORT_PYTHON) overrides the search', async () => {
    const enginesDir = join(root, 'engines');
    mkdirSync(enginesDir, { recursive: true });
    writeFileSync(join(enginesDir, 'torch_engine.py'), '');
    const auto = await chooseEngine('auto', { enginesDir, workdir, env: { HOME: join(root, 'home'), PATH: '/nonexistent' } });
    expect(auto).toMatchObject({ name: 'torch', python: venvCuda, cuda: true });
    expect(auto.reason).toMatch(/^auto: torch with CUDA; python: .*venv\/bin\/python \(torch 2\.3\.1\+cu121, CUDA 12\.1/);
    const pinned = await chooseEngine('torch', { enginesDir, workdir, env: { COHORT_PYTHON: debianCpu } });
    expect(pinned).toMatchObject({ name: 'torch', python: debianCpu, cuda: false });
    expect(pinned.reason).toMatch(/COHORT_PYTHON \/ the profile's python/);
    await expect(chooseEngine('torch', { enginesDir, workdir, env: { COHORT_PYTHON: condaNoTorch } })).rejects.toThrow(/no Python with PyTorch found on this host \(COHORT_PYTHON/);
  });
});

describe('an interpreter that does not answer in time', () => {
  it('is listed with the reason (not silently dropped), and the others still count', async () => {
    const slow = join(root, 'slow/bin/python');
    mkdirSync(join(root, 'slow/bin'), { recursive: true });
    writeFileSync(slow, '#!/bin/sh\nexec sleep 5\n'); // exec: the timeout's kill reaches the sleep, nothing is left behind
    chmodSync(slow, 0o755);
    const t0 = Date.now();
    const found = await findPythons([slow, debianCpu], { timeoutMs: 500 });
    expect(Date.now() - t0).toBeLessThan(4000);
    expect(found).toEqual([{ python: slow, version: '', error: 'no answer within 0.5 s (a slow or hung `import torch`?); killed' }, expect.objectContaining({ python: debianCpu, torch: '2.1.2' })]);
    expect(pickPython(found).explanation).toMatch(/also found: .*slow\/bin\/python \(Python \?, no torch: no answer within 0\.5 s/);
  });
});

// A real venv the way `python3 -m venv` makes one: bin/python is a symlink to the system interpreter,
// and pyvenv.cfg beside bin/ gives it its own site-packages. The torch in it is a stand-in module
// answering as a CUDA build (no GPU here). Before the fix it was dropped as a duplicate of
// /usr/bin/python3 (same real file), so a host with Debian's CPU torch trained on the CPU.
const SYSTEM = '/usr/bin/python3';
const sysVersion = existsSync(SYSTEM) ? spawnSync(SYSTEM, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' }).stdout.trim() : '';
describe.skipIf(!sysVersion)('a venv whose python is a symlink to the system interpreter', () => {
  it('is its own interpreter (own site-packages), not a duplicate of /usr/bin/python3: its CUDA torch wins', async () => {
    const wd = join(root, 'wd-symlink-venv');
    const venv = join(wd, 'venv');
    mkdirSync(join(venv, 'bin'), { recursive: true });
    writeFileSync(join(venv, 'pyvenv.cfg'), `home = /usr/bin\ninclude-system-site-packages = false\nversion = ${sysVersion}\n`);
    symlinkSync(SYSTEM, join(venv, 'bin', 'python'));
    const pkg = join(venv, 'lib', `python${sysVersion}`, 'site-packages', 'torch');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, '__init__.py'), '__version__ = "2.3.1+cu121"\nclass cuda:\n    is_available = staticmethod(lambda: True)\n    device_count = staticmethod(lambda: 4)\nclass version:\n    cuda = "12.1"\n');
    const py = join(venv, 'bin', 'python');
    const found = await findPythons([SYSTEM, 'python3', py]);
    expect(found.map((p) => p.python)).toContain(py);
    expect(found.find((p) => p.python === py)).toMatchObject({ torch: '2.3.1+cu121', cuda: true, gpus: 4 });
    expect(pickPython(found).chosen?.python).toBe(py);
    expect(found.filter((p) => p.python === SYSTEM)).toHaveLength(1);
    mkdirSync(join(root, 'engines'), { recursive: true });
    writeFileSync(join(root, 'engines', 'torch_engine.py'), '');
    const auto = await chooseEngine('auto', { enginesDir: join(root, 'engines'), workdir: wd, env: { HOME: join(root, 'home'), PATH: process.env.PATH } });
    expect(auto).toMatchObject({ name: 'torch', python: py, cuda: true });
  });
});


// Every ask is an `import torch` (1.3–2 CPU-s on a real host). On most hosts `/usr/bin/python3` and
// the `python3` PATH finds are one file, and `check-host` asks for the engine choice and the list at
// the same time: each interpreter must still be started once.
describe('each interpreter is started once', () => {
  const counted = (name: string, answer: object): { path: string; starts: () => number } => {
    const dir = join(root, 'counted', name);
    mkdirSync(dir, { recursive: true });
    const log = join(dir, 'starts.log');
    const path = join(dir, 'python3');
    writeFileSync(path, `#!/bin/sh\necho started >> '${log}'\necho '${JSON.stringify(answer)}'\n`);
    chmodSync(path, 0o755);
    return { path, starts: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0) };
  };

  it('a path and a bare name PATH finds at the same file: one start, listed once under the first name', async () => {
    const py = counted('same-file', { version: '3.11.2', prefix: '/usr', torch: '2.1.2', cuda: false, cudaVersion: '', gpus: 0 });
    const path = process.env.PATH;
    process.env.PATH = `${join(py.path, '..')}:${path ?? ''}`;
    try {
      const found = await findPythons([py.path, 'python3', join(root, 'missing/python')]);
      expect(found.map((p) => p.python)).toEqual([py.path]);
      expect(py.starts()).toBe(1);
    } finally {
      process.env.PATH = path;
    }
  });

  it('asks in flight at once with the same candidates share one start; a later ask starts it again', async () => {
    const py = counted('in-flight', { version: '3.11.2', prefix: '/opt/cu', torch: '2.3.1+cu121', cuda: true, cudaVersion: '12.1', gpus: 1, cudnn: '8902', nccl: '2.18.1' });
    const [a, b] = await Promise.all([findPythons([py.path]), findPythons([py.path])]);
    expect(a).toEqual(b);
    expect(py.starts()).toBe(1);
    // cuDNN and NCCL come with the same answer (`cohort check` reports them; no second `import torch`)
    expect(a[0]).toMatchObject({ torch: '2.3.1+cu121', cudnn: '8902', nccl: '2.18.1' });
    await findPythons([py.path]);
    expect(py.starts()).toBe(2);
  });
});

// A CPU-only torch (its version.py: cuda and hip None) has no GPU to find. Where the caller starts the
// engine next (the agent, `cohort check`'s computed step: enginesReportImport), it is not imported only
// to be imported again by the ranks; the engine names a torch that fails to import (torch_engine.py,
// test/torch/torch-config.test.ts). It is still imported where the choice depends on it. The real
// interpreter runs the real query; the torch packages are stand-ins that note each import in a file.
describe.skipIf(!sysVersion)('a CPU-only torch is taken from its files where the engine will name a failed import', () => {
  const dir = join(root, 'files-first');
  const imported = join(dir, 'imported.log');
  const engines = join(dir, 'engines');
  mkdirSync(engines, { recursive: true });
  writeFileSync(join(engines, 'torch_engine.py'), '');
  /** An interpreter (the system's, run through a script) whose only torch is a stand-in: cuda null = a CPU build; broken: its import fails. */
  const pythonWith = (name: string, version: string, cuda: string | null, broken = false): string => {
    const site = join(dir, name, 'site');
    mkdirSync(join(site, 'torch'), { recursive: true });
    writeFileSync(join(site, 'torch', 'version.py'), `__version__ = '${version}'\ncuda = ${cuda === null ? 'None' : `'${cuda}'`}\nhip = None\n`);
    writeFileSync(
      join(site, 'torch', '__init__.py'),
      `open(${JSON.stringify(imported)}, 'a').write('${name}\\n')\n${broken ? "raise ImportError('libtorch_cpu.so: cannot open shared object file')\n" : ''}__version__ = '${version}'\nclass cuda:\n    is_available = staticmethod(lambda: ${cuda === null ? 'False' : 'True'})\n    device_count = staticmethod(lambda: 2)\nclass version:\n    cuda = ${cuda === null ? 'None' : `'${cuda}'`}\n`,
    );
    const py = join(dir, name, 'bin', 'python');
    mkdirSync(join(py, '..'), { recursive: true });
    writeFileSync(py, `#!/bin/sh\nPYTHONPATH='${site}' exec ${SYSTEM} "$@"\n`);
    chmodSync(py, 0o755);
    return py;
  };
  const importsSince = (() => {
    let seen = 0;
    return () => {
      const all = existsSync(imported) ? readFileSync(imported, 'utf8').split('\n').filter(Boolean) : [];
      const fresh = all.slice(seen);
      seen = all.length;
      return fresh;
    };
  })();
  const cpu = pythonWith('cpu', '2.4.0+cpu', null);
  const brokenCpu = pythonWith('broken-cpu', '2.4.0+cpu', null, true);
  const cudaPy = pythonWith('cuda', '2.3.1+cu121', '12.1');
  // COHORT_PYTHON: the one interpreter asked (the search would find the system's real torch too).
  const choose = (engine: 'torch' | 'auto', python: string, enginesReportImport: boolean) => chooseEngine(engine, { enginesDir: engines, env: { COHORT_PYTHON: python }, enginesReportImport });

  it('--engine torch, the one torch a CPU build: chosen without importing it where the engine reports imports; imported for the host report', async () => {
    importsSince();
    expect(await choose('torch', cpu, true)).toMatchObject({ name: 'torch', python: cpu, cuda: false });
    expect(importsSince()).toEqual([]);
    expect((await choose('torch', cpu, true)).reason).toMatch(/\(torch 2\.4\.0\+cpu, CPU only\)/);
    // `cohort check`'s host report (no enginesReportImport): imported, as before
    expect(await choose('torch', cpu, false)).toMatchObject({ name: 'torch', python: cpu });
    expect(importsSince()).toEqual(['cpu']);
    // A broken CPU torch is taken on its files' word too: its ranks will say it does not import
    expect(await choose('torch', brokenCpu, true)).toMatchObject({ name: 'torch', python: brokenCpu });
    expect(importsSince()).toEqual([]);
    await expect(choose('torch', brokenCpu, false)).rejects.toThrow(/no Python with PyTorch found on this host/);
  });

  it('--engine torch with two Pythons that have torch, one of them a CPU build known from its files: every CPU torch is imported (one that imports must win)', async () => {
    const fromFiles = { python: cpu, version: '3.11.2', torch: '2.4.0+cpu', cuda: false, unimported: true };
    const other = { python: brokenCpu, version: '3.11.2', torch: '2.4.0+cpu', cuda: false, unimported: true };
    const noTorch = { python: '/opt/py/bin/python', version: '3.12.1', error: 'ModuleNotFoundError' };
    expect(cpuTorchImportNeeded('torch', fromFiles, [fromFiles, other], {})).toBe(true);
    expect(cpuTorchImportNeeded('torch', fromFiles, [fromFiles, noTorch], {})).toBe(false);
    expect(cpuTorchImportNeeded('torch', fromFiles, [fromFiles], {})).toBe(false);
    // auto prefers a CPU torch to tfjs only when no TensorFlow GPU binding is installed: then it must import
    expect(cpuTorchImportNeeded('auto', fromFiles, [fromFiles], { COHORT_RUNTIME_DIR: join(dir, 'no-runtime') })).toBe(true);
  });

  it('auto: a CUDA torch is always imported and asked; a CPU torch is imported before auto prefers it to tfjs, and a broken one leaves tfjs', async () => {
    importsSince();
    expect(await choose('auto', cudaPy, true)).toMatchObject({ name: 'torch', cuda: true });
    expect(importsSince()).toEqual(['cuda']);
    expect(await choose('auto', cpu, true)).toMatchObject({ name: 'torch', python: cpu, cuda: false });
    expect(importsSince()).toEqual(['cpu']);
    expect(await choose('auto', brokenCpu, true)).toMatchObject({ name: 'tfjs' });
    expect(importsSince()).toEqual(['broken-cpu']);
  });
});
