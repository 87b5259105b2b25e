// Which engine runs this host's ranks. `tfjs` and `torch` are what the user asked for; `auto`
// follows the order in DESIGN.md: torch with CUDA, else tfjs with the TensorFlow GPU binding,
// else torch on CPU, else tfjs. The reason travels into the `hello` event.
//
// Python: every interpreter found is asked what torch it has (/usr/bin/python3, python3 and python
// on PATH, venvs under the workdir, conda), and a CUDA torch wins over a CPU torch (a host with
// Debian's CPU torch and a CUDA torch in a venv must train on the GPU). The profile's `python`
// for a host (COHORT_PYTHON in its environment) overrides the search.
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CohortError, type Engine } from '../protocol';
import { CPU_TORCH_VERSION_PY } from '../util/torch-files';

export interface EngineChoice {
  name: 'tfjs' | 'torch';
  reason: string;
  python?: string;
  script?: string;
  /** torch: whether that Python's torch has CUDA. */
  cuda?: boolean;
}

export interface PythonInfo {
  python: string;
  /** Python's own version; '' when the interpreter did not answer. */
  version: string;
  torch?: string;
  cuda?: boolean;
  /** torch.version.cuda, e.g. "12.1". */
  cudaVersion?: string;
  gpus?: number;
  /** Why the interpreter has no torch (its import error), when it has none. */
  error?: string;
  /** torch.backends.cudnn.version() and torch.cuda.nccl.version(), where torch has them (`cohort check` reports them). */
  cudnn?: string;
  nccl?: string;
  /**
   * torch's version was read from its files, not imported (findPythons' `cpuTorchFromFiles`): a build
   * without CUDA or ROCm, so `cuda` is false for certain, but whether it imports is not known yet.
   */
  unimported?: boolean;
}

export interface TorchInfo {
  python: string;
  torch: string;
  cuda: boolean;
}

/** The interpreters to ask, in order of preference among equals (an explicit COHORT_PYTHON alone). */
export function pythonCandidates(env: NodeJS.ProcessEnv, workdir?: string): string[] {
  if (env.COHORT_PYTHON) return [env.COHORT_PYTHON];
  const out = ['/usr/bin/python3', 'python3', 'python'];
  const venvRoots = workdir ? [workdir, join(workdir, 'runtime')] : [];
  for (const root of venvRoots) {
    let names: string[] = [];
    try {
      names = readdirSync(root);
    } catch {
      continue;
    }
    // Any <dir>/bin/python (a venv, a conda env), as `cohort probe` lists them.
    for (const n of names.sort()) if (existsSync(join(root, n, 'bin', 'python'))) out.push(join(root, n, 'bin', 'python'));
  }
  const home = env.HOME ?? homedir();
  const conda = [env.CONDA_PREFIX, ...['miniconda3', 'anaconda3', 'miniforge3', 'mambaforge'].map((d) => join(home, d)), '/opt/conda'].filter((x): x is string => !!x);
  for (const c of conda) out.push(join(c, 'bin', 'python'));
  return out;
}

// sys.prefix tells environments apart: a venv's bin/python is a symlink to the system interpreter
// (same real file) but has its own prefix and site-packages. With the argument `files`, a torch built
// without CUDA or ROCm (its version.py: cuda and hip None) is answered from that file, as `cohort
// probe` does (electron/core/cluster/probe.ts): it has no GPU to find, and importing it costs 1.3-2.3
// CPU-s; a CUDA or ROCm build is imported and asked.
const QUERY = `import json, sys
${CPU_TORCH_VERSION_PY}
r = {"version": sys.version.split()[0], "prefix": sys.prefix}
try:
    cpu = cpu_torch_version() if sys.argv[1:] == ["files"] else None
    if cpu is not None:
        r.update(torch=cpu, cuda=False, cudaVersion="", gpus=0, unimported=True)
        print(json.dumps(r))
        sys.exit(0)
    import torch
    r.update(torch=torch.__version__, cuda=bool(torch.cuda.is_available()), cudaVersion=torch.version.cuda or "", gpus=torch.cuda.device_count() if torch.cuda.is_available() else 0)
    try:
        r["cudnn"] = str(torch.backends.cudnn.version() or "")
        v = torch.cuda.nccl.version()
        r["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception:
        pass
except Exception as e:
    r["error"] = type(e).__name__ + ": " + str(e)
print(json.dumps(r))`;

/**
 * Asks every candidate (in parallel) which Python and torch it is; missing interpreters are left out,
 * duplicates once: the same real file AND the same sys.prefix (a venv's python links to the system's
 * interpreter but is another environment).
 *
 * Each interpreter is started once: candidates that name the same file (`/usr/bin/python3` and a
 * `python3` that PATH finds there, as on most hosts) share one answer, and calls in flight at the
 * same time with the same candidates share theirs (`check-host` asks for the engine choice and for
 * the list at once). Every ask is an `import torch`, 1.3–2 CPU-seconds, which the host's ranks or
 * neighbours wait for. The answers are not kept after the call: a later ask sees a torch installed since.
 */
const asking = new Map<string, Promise<PythonInfo[]>>();

/** `cpuTorchFromFiles`: a CPU-only torch is answered from its files, not imported (QUERY's `files`; PythonInfo.unimported). */
export function findPythons(candidates: string[], opts: { timeoutMs?: number; cpuTorchFromFiles?: boolean } = {}): Promise<PythonInfo[]> {
  const key = JSON.stringify([candidates, opts.timeoutMs ?? QUERY_TIMEOUT_MS, opts.cpuTorchFromFiles === true]);
  const inFlight = asking.get(key);
  if (inFlight) return inFlight;
  const asked = askPythons(candidates, opts.timeoutMs ?? QUERY_TIMEOUT_MS, opts.cpuTorchFromFiles === true).finally(() => asking.delete(key));
  asking.set(key, asked);
  return asked;
}

async function askPythons(candidates: string[], timeoutMs: number, cpuTorchFromFiles: boolean): Promise<PythonInfo[]> {
  const runs = new Map<string, ReturnType<typeof run>>();
  const answers = await Promise.all(
    candidates.map(async (python) => {
      const file = commandPath(python) ?? python;
      if (!runs.has(file)) runs.set(file, run(python, ['-c', QUERY, ...(cpuTorchFromFiles ? ['files'] : [])], timeoutMs));
      return { python, answer: await runs.get(file)! };
    }),
  );
  const seen = new Set<string>();
  const firstTime = (key: string): boolean => !seen.has(key) && Boolean(seen.add(key));
  const found: PythonInfo[] = [];
  for (const { python, answer } of answers) {
    if (answer.missing) continue;
    if (answer.out === undefined) {
      // It exists but did not answer: say so (a slow `import torch` must not make a CUDA torch vanish from the reason).
      if (!firstTime(`${realPath(python)}\0!`)) continue;
      found.push({ python, version: '', error: answer.error });
      continue;
    }
    const out = answer.out;
    try {
      const j = JSON.parse(out.trim().split('\n').at(-1)!) as Partial<PythonInfo> & { prefix?: unknown };
      if (!firstTime(`${realPath(python)}\0${typeof j.prefix === 'string' ? j.prefix : ''}`)) continue;
      found.push({
        python,
        version: typeof j.version === 'string' ? j.version : '',
        ...(typeof j.torch === 'string' ? { torch: j.torch, cuda: j.cuda === true, gpus: typeof j.gpus === 'number' ? j.gpus : 0, ...(j.cudaVersion ? { cudaVersion: String(j.cudaVersion) } : {}) } : {}),
        ...(typeof j.error === 'string' ? { error: j.error } : {}),
        ...(typeof j.cudnn === 'string' && j.cudnn ? { cudnn: j.cudnn } : {}),
        ...(typeof j.nccl === 'string' && j.nccl ? { nccl: j.nccl } : {}),
        ...(j.unimported === true && typeof j.torch === 'string' && j.cuda === false ? { unimported: true } : {}),
      });
    } catch {
      if (!firstTime(`${realPath(python)}\0?`)) continue;
      found.push({ python, version: '', error: `unexpected output: ${out.trim().slice(0, 120)}` });
    }
  }
  return found;
}

/** The interpreter to train with: CUDA torch first, then CPU torch, each in candidate order; the reason names the runners-up. */
export function pickPython(found: PythonInfo[]): { chosen?: PythonInfo; explanation: string } {
  const withTorch = found.filter((p) => p.torch);
  const chosen = withTorch.find((p) => p.cuda) ?? withTorch[0];
  const others = found.filter((p) => p !== chosen).map(describePython);
  if (!chosen) return { explanation: found.length ? `no Python with torch (${others.join('; ')})` : 'no Python interpreter found' };
  return { chosen, explanation: `${describePython(chosen)}${others.length ? `; also found: ${others.join('; ')}` : ''}` };
}

export function describePython(p: PythonInfo): string {
  if (!p.torch) return `${p.python} (Python ${p.version || '?'}, no torch${p.error ? `: ${p.error.slice(0, 80)}` : ''})`;
  return `${p.python} (torch ${p.torch}, ${p.cuda ? `CUDA ${p.cudaVersion || '?'}, ${p.gpus ?? 0} GPU(s)` : 'CPU only'})`;
}

/**
 * The Python with torch that the engine would use (COHORT_PYTHON alone when set). `cpuTorchFromFiles`:
 * a CPU-only torch is taken on its files' word (not imported) where nothing else depends on whether it
 * imports; `needsImport(chosen, found)` says where something does, and then every CPU torch is imported.
 */
export async function findTorch(
  env: NodeJS.ProcessEnv = process.env,
  workdir?: string,
  opts: { timeoutMs?: number; cpuTorchFromFiles?: boolean; needsImport?: (chosen: PythonInfo, found: PythonInfo[]) => boolean } = {},
): Promise<(TorchInfo & { explanation: string; tried: string[] }) | undefined> {
  const tried = pythonCandidates(env, workdir);
  const ask = { ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }) };
  let found = await findPythons(tried, { ...ask, cpuTorchFromFiles: opts.cpuTorchFromFiles === true });
  let picked = pickPython(found);
  if (picked.chosen?.unimported && opts.needsImport?.(picked.chosen, found) !== false) {
    found = await findPythons(tried, ask);
    picked = pickPython(found);
  }
  const { chosen, explanation } = picked;
  return chosen?.torch ? { python: chosen.python, torch: chosen.torch, cuda: chosen.cuda === true, explanation, tried } : undefined;
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

/**
 * Whether a choice that found `chosen` (a CPU torch known from its files, not imported) depends on
 * whether it imports: `auto` about to prefer it to tfjs (no CUDA torch, no TensorFlow GPU binding), or
 * `--engine torch` with more than one Python that has torch (one that imports must win).
 */
export function cpuTorchImportNeeded(engine: Engine, chosen: PythonInfo, found: PythonInfo[], env: NodeJS.ProcessEnv): boolean {
  if (engine === 'auto') return !chosen.cuda && !tfjsGpuInstalled(env);
  return found.filter((p) => p.torch).length > 1;
}

/**
 * `pythonTimeoutMs`: how long each interpreter may take to answer (findPythons).
 * `enginesReportImport`: the caller starts the chosen engine next (the agent, `cohort check`'s computed
 * step), and the torch engine reports a torch that fails to import as an `engine-unavailable` error
 * naming the interpreter (torch_engine.py). Then a CPU-only torch is not imported here only to be
 * imported again by the ranks (1.3-2.3 CPU-s a host and run), unless the choice depends on it:
 * `auto` about to pick CPU torch over tfjs, or `--engine torch` with several Pythons that have torch
 * (one that imports must win over one that does not). Without it (`cohort check`'s host report), every
 * torch is imported, as the report names what fails.
 */
export async function chooseEngine(engine: Engine, opts: { enginesDir: string; workdir?: string; env?: NodeJS.ProcessEnv; pythonTimeoutMs?: number; enginesReportImport?: boolean }): Promise<EngineChoice> {
  const env = opts.env ?? process.env;
  const script = join(opts.enginesDir, 'torch_engine.py');
  if (engine === 'tfjs') return { name: 'tfjs', reason: '--engine tfjs, the default' };
  const needsImport = (chosen: PythonInfo, found: PythonInfo[]) => cpuTorchImportNeeded(engine, chosen, found, env);
  const torch = existsSync(script)
    ? await findTorch(env, opts.workdir, { ...(opts.pythonTimeoutMs === undefined ? {} : { timeoutMs: opts.pythonTimeoutMs }), cpuTorchFromFiles: opts.enginesReportImport === true, needsImport })
    : undefined;
  const pinned = env.COHORT_PYTHON ? ` (COHORT_PYTHON / the profile's python: ${env.COHORT_PYTHON})` : '';
  if (engine === 'torch') {
    if (!existsSync(script)) throw new CohortError('engine-unavailable', `--engine torch: the engine script ${script} is missing from the deployed bundle`, { hint: 'redeploy: cohort deploy --force' });
    if (!torch) {
      throw new CohortError('engine-unavailable', `--engine torch: no Python with PyTorch found on this host${pinned} (tried ${pythonCandidates(env, opts.workdir).join(', ')})`, {
        hint: "install PyTorch (a CUDA build on GPU hosts, e.g. in a venv under the workdir), or set the host's python in the profile",
      });
    }
    return { name: 'torch', reason: `--engine torch${pinned}; python: ${torch.explanation}`, python: torch.python, script, cuda: torch.cuda };
  }
  if (torch?.cuda) return { name: 'torch', reason: `auto: torch with CUDA${pinned}; python: ${torch.explanation}`, python: torch.python, script, cuda: true };
  if (tfjsGpuInstalled(env)) return { name: 'tfjs', reason: `auto: no CUDA PyTorch${torch ? ` (${torch.explanation})` : ''}; @tensorflow/tfjs-node-gpu is installed` };
  if (torch) return { name: 'torch', reason: `auto: no GPU engine; torch on CPU is faster than tfjs here${pinned}; python: ${torch.explanation}`, python: torch.python, script, cuda: false };
  return { name: 'tfjs', reason: 'auto: no PyTorch and no TensorFlow GPU binding on this host; tfjs' };
}

/** The file an interpreter name runs (bare names looked up on PATH), for telling duplicates apart. */
function realPath(p: string): string {
  const file = commandPath(p);
  if (file === undefined) return p;
  try {
    return realpathSync(file);
  } catch {
    return p; // not there
  }
}

/**
 * The file a command name starts, as execFile finds it: a path as given, a bare name in the first
 * PATH folder that has it executable (no symlink followed: a venv's python is another interpreter).
 * undefined when none has it.
 */
function commandPath(cmd: string): string | undefined {
  if (cmd.includes('/')) return cmd;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (!dir) continue;
    const file = join(dir, cmd);
    try {
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * How long an interpreter may take to answer: a first `import torch` (CUDA init, a cold network home)
 * can take tens of seconds. Kept under the leader agent's 60 s wait for its followers (run-agent.ts),
 * which a follower only joins after choosing its engine.
 */
const QUERY_TIMEOUT_MS = 45_000;

/** Runs an interpreter: its stdout, or why not (`missing`: no such file, left out of the list). */
function run(cmd: string, args: string[], timeoutMs: number): Promise<{ missing?: true; out?: string; error: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      if (!err) return resolve({ out: stdout, error: '' });
      const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null };
      if (e.code === 'ENOENT' || e.code === 'EACCES') return resolve({ missing: true, error: e.code });
      if (e.killed || e.signal) return resolve({ error: `no answer within ${timeoutMs / 1000} s (a slow or hung \`import torch\`?); killed` });
      resolve({ error: `failed (exit ${String(e.code)}): ${String(stderr).trim().split('\n').pop()?.slice(0, 120) ?? ''}` });
    });
  });
}
