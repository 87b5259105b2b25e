// Which engine runs this host's ranks. `tfjs` and `torch` are what the user asked for; `auto`
// follows the order in DESIGN.md: torch with CUDA, else tfjs with the TensorFlow GPU binding,
// else torch on CPU, else tfjs. The reason travels into the `hello` event.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Engine } from '../protocol';

export interface EngineChoice {
  name: 'tfjs' | 'torch';
  reason: string;
  python?: string;
  script?: string;
}

export interface TorchInfo {
  python: string;
  torch: string;
  cuda: boolean;
}

const PYTHON_CANDIDATES = ['/usr/bin/python3', 'python3', 'python'];

/** Finds a Python interpreter that can import torch (COHORT_PYTHON first). */
export async function findTorch(env: NodeJS.ProcessEnv = process.env): Promise<TorchInfo | undefined> {
  const candidates = env.COHORT_PYTHON ? [env.COHORT_PYTHON] : PYTHON_CANDIDATES;
  for (const python of candidates) {
    const out = await run(python, ['-c', 'import json, torch; print(json.dumps({"torch": torch.__version__, "cuda": torch.cuda.is_available()}))']);
    if (out) {
      try {
        const j = JSON.parse(out.trim().split('\n').at(-1)!) as { torch: string; cuda: boolean };
        return { python, torch: j.torch, cuda: j.cuda };
      } catch {
        // not the output we asked for; try the next interpreter
      }
    }
  }
  return undefined;
}

export function tfjsGpuInstalled(env: NodeJS.ProcessEnv = process.env): boolean {
  const roots = [env.COHORT_RUNTIME_DIR ? join(env.COHORT_RUNTIME_DIR, 'node_modules') : undefined, process.cwd()].filter((x): x is string => !!x);
  const req = createRequire(join(process.cwd(), 'noop.js'));
  try {
    req.resolve('@tensorflow/tfjs-node-gpu', { paths: roots });
    return true;
  } catch {
    return false;
  }
}

export async function chooseEngine(engine: Engine, opts: { enginesDir: string }): Promise<EngineChoice> {
  const script = join(opts.enginesDir, 'torch_engine.py');
  if (engine === 'tfjs') return { name: 'tfjs', reason: '--engine tfjs, the default' };
  const torch = existsSync(script) ? await findTorch() : undefined;
  if (engine === 'torch') {
    if (!existsSync(script)) throw new Error(`--engine torch: the engine script ${script} is missing from the deployed bundle; redeploy (cohort deploy)`);
    if (!torch) {
      throw new Error(
        `--engine torch: no Python with PyTorch found on this host (tried ${(process.env.COHORT_PYTHON ? [process.env.COHORT_PYTHON] : PYTHON_CANDIDATES).join(', ')}); install PyTorch (e.g. apt install python3-torch) or set COHORT_PYTHON in the host's env`,
      );
    }
    return { name: 'torch', reason: `--engine torch: ${torch.python} has torch ${torch.torch}${torch.cuda ? ' with CUDA' : ' (CPU)'}`, python: torch.python, script };
  }
  if (torch?.cuda) return { name: 'torch', reason: `auto: torch ${torch.torch} with CUDA found (${torch.python})`, python: torch.python, script };
  if (tfjsGpuInstalled()) return { name: 'tfjs', reason: 'auto: no CUDA PyTorch; @tensorflow/tfjs-node-gpu is installed' };
  if (torch) return { name: 'torch', reason: `auto: no GPU engine; torch ${torch.torch} on CPU is faster than tfjs here (${torch.python})`, python: torch.python, script };
  return { name: 'tfjs', reason: 'auto: no PyTorch and no TensorFlow GPU binding on this host; tfjs' };
}

function run(cmd: string, args: string[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 20_000 }, (err, stdout) => resolve(err ? undefined : stdout));
  });
}
