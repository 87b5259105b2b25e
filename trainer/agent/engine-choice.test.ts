// The thin boundary: fake interpreters (small shell scripts printing what a Python would answer to
// the engine choice's query). Discovery, de-duplication, preference and the reason are the real code.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chooseEngine, findPythons, pickPython, pythonCandidates } from './engine-choice';

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
const condaNoTorch = fakePython(join(root, 'home/miniconda3/bin/python'), { version: '3.12.1', error: 'ModuleNotFoundError: No module named torch' });
const broken = fakePython(join(root, 'weird/python'), 'Segmentation fault');

describe('python discovery and choice', () => {
  it('candidates include the system, PATH, venvs under the workdir and conda; COHORT_PYTHON alone when set', () => {
    const c = pythonCandidates({ HOME: join(root, 'home') }, workdir);
    expect(c.slice(0, 3)).toEqual(['/usr/bin/python3', 'python3', 'python']);
    expect(c).toContain(venvCuda);
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
