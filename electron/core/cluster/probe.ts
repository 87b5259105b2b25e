// Probe: what a host offers (OS, cores, RAM, Node, GPUs, TensorFlow bindings, PyTorch), found by a
// POSIX shell script run over one SSH exec. Shell, not Node, because a host without Node ≥ 20 must
// still be described (and told how to fix it). Output is `key=value` lines; parseProbe reads them.
import type { GpuInfo, HostProbe, SlurmProbe } from '../../common';
import { BF16_RULE, bf16Native, parseComputeCapability } from '../../../trainer/util/compute-capability';
import { CPU_TORCH_VERSION_PY } from '../../../trainer/util/torch-files';

export const MIN_NODE_MAJOR = 20;

/** The script; `workdir` is where `cohort provision` installs runtime packages. */
export function probeScript(workdir: string): string {
  const wd = shellQuote(workdir);
  return `
set +e
WD=${wd}
case "$WD" in "~/"*) WD="$HOME/\${WD#\\~/}";; esac
echo "os=$(uname -s 2>/dev/null) $(uname -r 2>/dev/null)"
echo "arch=$(uname -m 2>/dev/null)"
echo "cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null)"
if [ -r /proc/meminfo ]; then echo "mem=$(awk '/^MemTotal:/ {print $2*1024}' /proc/meminfo)"; else echo "mem=$(sysctl -n hw.memsize 2>/dev/null)"; fi
NODE=$(command -v node 2>/dev/null)
if [ -n "$NODE" ]; then echo "node=$NODE|$("$NODE" --version 2>/dev/null)"; fi
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader,nounits 2>/dev/null | while IFS= read -r l; do echo "gpu=$l"; done
  # Asked apart: drivers before R510 do not know compute_cap and fail the whole query.
  nvidia-smi --query-gpu=index,compute_cap --format=csv,noheader,nounits 2>/dev/null | while IFS= read -r l; do echo "gpucc=$l"; done
  echo "cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\\([0-9.]*\\).*/\\1/p' | head -n 1)"
fi
for m in tfjs-node-gpu tfjs-node; do
  if [ -d "$WD/runtime/node_modules/@tensorflow/$m" ]; then echo "$m=$WD/runtime"; fi
done
# Every Python that might train: the profile's (COHORT_PYTHON), the system's, PATH's, venvs under the
# workdir, conda. Each says its torch and CUDA; the agent prefers a CUDA torch (engine-choice.ts).
# The same interpreter twice is asked once: same real file in the same folder. Not the real file
# alone: a venv's bin/python links to the system's interpreter, yet is another environment.
# A torch built without CUDA or ROCm (torch/version.py: cuda and hip None) has no GPU to find:
# its version is read from that file, not by importing torch (1.3-2 CPU-s a host). A build with
# CUDA or ROCm is imported and asked. A CPU torch that fails to import is listed with its version;
# the engine choice (the agent, \`cohort check\`) imports it and names the error.
SEEN=" "
for P in "$COHORT_PYTHON" /usr/bin/python3 python3 python "$WD"/*/bin/python "$WD"/runtime/*/bin/python "$CONDA_PREFIX/bin/python" "$HOME/miniconda3/bin/python" "$HOME/anaconda3/bin/python" "$HOME/miniforge3/bin/python" /opt/conda/bin/python; do
  [ -n "$P" ] || continue
  Q=$(command -v "$P" 2>/dev/null) || continue
  R="$(dirname "$Q")|$(readlink -f "$Q" 2>/dev/null || echo "$Q")"
  case "$SEEN" in *" $R "*) continue;; esac
  SEEN="$SEEN$R "
  OUT=$("$Q" -c 'import sys; v=sys.version.split()[0]
${CPU_TORCH_VERSION_PY}
try:
    cpu = cpu_torch_version()
    if cpu is not None:
        print("|".join([v, cpu, "False", "", "0"]))
    else:
        import torch; c=torch.cuda.is_available(); print("|".join([v, torch.__version__, str(c), torch.version.cuda or "", str(torch.cuda.device_count() if c else 0)]))
except Exception:
    print(v + "||||")' 2>/dev/null)
  [ -n "$OUT" ] || continue
  echo "python=$Q|$OUT"
done
echo "probe=done"
`;
}

export function parseProbe(host: string, text: string, probedAt = new Date().toISOString()): HostProbe {
  const p: HostProbe = { host, ok: false, probedAt, gpus: [], tfjsNodeGpu: false, tfjsNode: false };
  let cuda = '';
  let complete = false;
  const caps = new Map<number, string>();
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    switch (key) {
      case 'os':
        p.os = value;
        break;
      case 'arch':
        p.arch = value;
        break;
      case 'cores':
        if (Number(value) > 0) p.cores = Number(value);
        break;
      case 'mem':
        if (Number(value) > 0) p.memBytes = Number(value);
        break;
      case 'node': {
        const [path, version] = value.split('|');
        const major = Number(/^v?(\d+)/.exec(version ?? '')?.[1]);
        p.node = { path: path ?? '', version: version ?? '', ok: major >= MIN_NODE_MAJOR };
        break;
      }
      case 'gpu': {
        const [index, name, mem, driver] = value.split(',').map((s) => s.trim());
        const g: GpuInfo = { index: Number(index), name: name ?? '', memoryBytes: Number(mem) * 2 ** 20, driver: driver ?? '', cuda: '' };
        if (Number.isFinite(g.index)) p.gpus.push(g);
        break;
      }
      case 'gpucc': {
        const [index, cc] = value.split(',').map((s) => s.trim());
        if (parseComputeCapability(cc)) caps.set(Number(index), cc!);
        break;
      }
      case 'cuda':
        cuda = value;
        break;
      case 'tfjs-node-gpu':
        p.tfjsNodeGpu = true;
        break;
      case 'tfjs-node':
        p.tfjsNode = true;
        break;
      case 'python': {
        const [path, version, torch, hasCuda, cudaVersion, gpus] = value.split('|');
        (p.pythons ??= []).push({ path: path ?? '', version: version ?? '', ...(torch ? { torch, cuda: hasCuda === 'True', ...(cudaVersion ? { cudaVersion } : {}), gpus: Number(gpus) || 0 } : {}) });
        break;
      }
      case 'probe':
        complete = value === 'done';
        break;
    }
  }
  for (const g of p.gpus) {
    g.cuda = cuda;
    const cc = caps.get(g.index);
    if (cc) g.computeCap = cc;
  }
  // The one the agent would pick (engine-choice.ts's order): the first CUDA torch, else the first torch, else the first Python.
  const pick = p.pythons?.find((x) => x.cuda) ?? p.pythons?.find((x) => x.torch) ?? p.pythons?.[0];
  if (pick) {
    p.python = { path: pick.path, version: pick.version };
    if (pick.torch) p.torch = { version: pick.torch, cuda: pick.cuda === true };
  }
  p.ok = complete && !!p.node?.ok;
  if (!complete) p.error = { code: 'probe-incomplete', message: `the probe script on ${host} did not finish`, hint: 'check that the login shell is POSIX sh compatible' };
  else if (!p.node) p.error = { code: 'node-missing', message: `${host} has no Node.js on the PATH of a non-interactive SSH login`, hint: `install Node.js ${MIN_NODE_MAJOR} or newer on ${host} (e.g. from nodejs.org or your distribution's nodejs ${MIN_NODE_MAJOR}.x package), or put it on the PATH in the host's env` };
  else if (!p.node.ok) p.error = { code: 'node-too-old', message: `${host} has Node.js ${p.node.version} at ${p.node.path}; the trainer needs ${MIN_NODE_MAJOR} or newer`, hint: `upgrade Node.js on ${host} to ${MIN_NODE_MAJOR}.x or newer` };
  return p;
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** One line per host for `cohort probe` (table form). */
export function probeSummary(p: HostProbe): string {
  if (p.error && !p.node) return `${p.host}: ${p.error.message}`;
  const gpu = p.gpus.length ? p.gpus.map((g) => `${g.name} ${(g.memoryBytes / 2 ** 30).toFixed(0)} GiB${g.computeCap ? ` cc ${g.computeCap}` : ''}`).join(', ') + ` (driver ${p.gpus[0]!.driver}, CUDA ${p.gpus[0]!.cuda || '?'}${bf16Note(p.gpus)})` : 'CPU only';
  const torch = p.torch ? `torch ${p.torch.version}${p.torch.cuda ? '+cuda' : ''} (${p.python?.path})` : 'no torch';
  const more = (p.pythons?.length ?? 0) > 1 ? ` [pythons: ${p.pythons!.map((x) => `${x.path} ${x.torch ? `torch ${x.torch} ${x.cuda ? `CUDA ${x.cudaVersion ?? '?'}` : 'CPU'}` : 'no torch'}`).join('; ')}]` : '';
  const tf = p.tfjsNodeGpu ? 'tfjs-node-gpu' : p.tfjsNode ? 'tfjs-node' : 'tfjs wasm only';
  const line = `${p.host}: ${p.os ?? '?'} ${p.arch ?? ''}, ${p.cores ?? '?'} cores, ${p.memBytes ? (p.memBytes / 2 ** 30).toFixed(1) + ' GiB' : '?'}, node ${p.node?.version ?? 'missing'}, ${gpu}, ${tf}, ${torch}${more}${p.error ? ` — ${p.error.message}` : ''}`;
  return p.slurm ? [line, ...slurmLines(p.slurm)].join('\n') : line;
}

/** A Slurm profile's login-node probe in a terminal's words: what the dashboard's Slurm panel shows (SlurmProbePanel.svelte). */
export function slurmLines(s: SlurmProbe): string[] {
  const gres = (g: string) => (g ? `gres ${g}` : 'no gres');
  return [
    `  Slurm ${s.version.replace(/^slurm(-wlm)?\s+/i, '')}`,
    ...s.partitions.map((p) => `  partition ${p.name}${p.isDefault ? ' (default)' : ''}: ${p.avail}, ${p.idleNodes}/${p.nodes} node(s) idle, time limit ${p.timeLimit}, ${gres(p.gres)}`),
    ...s.nodes.map((n) => `  node ${n.name}: ${n.state}, ${n.cpus} CPU(s), ${n.memMiB} MiB, ${gres(n.gres)}`),
    `  accounts: ${s.accounts ? s.accounts.join(', ') || 'none' : `unknown${s.accountsNote ? ` (${s.accountsNote.replace(/^accounts unknown:\s*/, '')})` : ''}`}`,
    s.workdirShared === 'yes'
      ? `  workdir: seen from a compute node${s.computeNode ? ` (${s.computeNode})` : ''}`
      : `  workdir: ${s.workdirShared === 'no' ? 'NOT seen from the compute nodes' : 'unchecked'}${s.workdirNote ? `: ${s.workdirNote}` : ''}`,
  ];
}

/** "; bf16: GPU 0, 1 only" style note: which GPUs compute bf16 natively (the torch engine's and the agent's rule). */
export function bf16Note(gpus: GpuInfo[]): string {
  const known = gpus.filter((g) => parseComputeCapability(g.computeCap));
  if (!known.length) return gpus.length ? '; bf16 unknown (driver does not report compute_cap)' : '';
  const no = known.filter((g) => !bf16Native(parseComputeCapability(g.computeCap)!));
  if (!no.length) return known.length === gpus.length ? '; bf16 native' : `; bf16 native on GPU ${known.map((g) => g.index).join(', ')}`;
  return `; no --bf16 on GPU ${no.map((g) => `${g.index} (cc ${g.computeCap})`).join(', ')}: needs ${BF16_RULE}`;
}
