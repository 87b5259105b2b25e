// What `cohort check` concludes from the hosts' reports: each host's problems (workdir, disk, clock,
// engine, GPU health) and the consistency table across hosts, where a difference that breaks a
// run (bundle, engine, torch or NCCL major version) is an error and any other a warning, each
// naming the hosts. Pure: the reports in, rows and problems out (unit-tested without hosts).
import type { CheckHost, CheckProblem, ConsistencyRow, HostCheckReport } from '../../../trainer/protocol/check';

/** Free disk a run needs on a host: the bundle (~30 MiB), run records and logs, and checkpoints (ResNet-50 with optimizer state: ~300 MiB each, two kept). */
export const DISK_NEEDED_BYTES = 1 << 30;
/** Clock offset beyond which run records' times disagree visibly (warning). */
export const CLOCK_WARN_MS = 1000;
/** Memory held by processes that are not Cohort's, as a fraction of the GPU's, that is worth a warning. */
export const FOREIGN_WARN_FRACTION = 0.1;

const GIB = 2 ** 30;
const gib = (b: number) => `${(b / GIB).toFixed(1)} GiB`;

export function hostProblems(h: CheckHost, need = DISK_NEEDED_BYTES): CheckProblem[] {
  const out: CheckProblem[] = [];
  const r = h.report;
  const p = (severity: CheckProblem['severity'], code: string, message: string, hint: string) => out.push({ severity, host: h.host, code, message, hint });
  if (!r) return out;
  if (!r.workdirWritable) p('error', 'workdir-not-writable', `${h.host}: cannot write in the workdir ${r.workdir}: ${r.workdirError ?? '?'}`, `give ${h.host} a workdir its user can write (profile host field "workdir"), or fix its permissions`);
  if (r.freeBytes !== undefined && r.freeBytes < need) {
    p('error', 'disk-low', `${h.host}: ${gib(r.freeBytes)} free under ${r.workdir}; a run needs about ${gib(need)} (bundle, records, checkpoints)`, `free disk on ${h.host} or point its workdir at a larger filesystem`);
  }
  if (h.clockOffsetMs !== undefined && Math.abs(h.clockOffsetMs) > CLOCK_WARN_MS) {
    p('warning', 'clock-offset', `${h.host}: its clock is ${(h.clockOffsetMs / 1000).toFixed(1)} s ${h.clockOffsetMs > 0 ? 'ahead of' : 'behind'} this machine's`, `run NTP on ${h.host} (e.g. systemd-timesyncd or chrony): run records and timelines mix both clocks`);
  }
  if ('error' in r.engine) p('error', 'engine-unavailable', `${h.host}: ${r.engine.error.message}`, r.engine.error.hint ?? `install what the engine needs on ${h.host}, or choose another --engine`);
  if (r.smi === 'failed') p('warning', 'nvidia-smi-failed', `${h.host}: nvidia-smi is installed but did not answer (driver not loaded, or a GPU fell off the bus)`, `run nvidia-smi on ${h.host}; check dmesg for Xid errors; reload the driver or reboot the node`);
  for (const g of r.gpus) {
    const gpu = `${h.host} GPU ${g.index} (${g.name})`;
    if (g.eccUncorrectedVolatile) p('warning', 'gpu-ecc', `${gpu}: ${g.eccUncorrectedVolatile} uncorrected ECC error(s) since the driver loaded`, `drain ${h.host} GPU ${g.index} from runs and reset it (nvidia-smi -r -i ${g.index}); if errors come back, the GPU needs replacing`);
    if (g.retiredPagesPending || g.remappedRowsPending) p('warning', 'gpu-rows-pending', `${gpu}: memory ${g.remappedRowsPending ? 'row remapping' : 'page retirement'} is pending`, `reset GPU ${g.index} on ${h.host} (nvidia-smi -r -i ${g.index}) or reboot it before training`);
    if (g.remappedRowsFailure) p('warning', 'gpu-remap-failed', `${gpu}: a memory row remapping failed`, `take GPU ${g.index} on ${h.host} out of service: it needs replacing`);
    const throttles = g.throttleReasons.filter((t) => !['applications clocks setting', 'sync boost', 'display clock setting'].includes(t));
    if (throttles.length) p('warning', 'gpu-throttled', `${gpu}: clocks throttled (${throttles.join(', ')})`, `check ${h.host}'s cooling and power limits (nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE); a throttled GPU makes its rank the straggler`);
    if (g.persistenceMode === 'Disabled') p('warning', 'gpu-persistence-off', `${gpu}: persistence mode is off (each start re-initialises the driver, seconds per rank)`, `enable it on ${h.host}: nvidia-smi -pm 1 (or run nvidia-persistenced)`);
    const foreign = g.foreign.reduce((s, f) => s + f.bytes, 0);
    if (g.memoryTotalBytes > 0 && foreign >= FOREIGN_WARN_FRACTION * g.memoryTotalBytes) {
      const who = g.foreign.map((f) => `pid ${f.pid} ${f.name} ${gib(f.bytes)}`).join(', ');
      p('warning', 'gpu-memory-held', `${gpu}: ${gib(foreign)} of ${gib(g.memoryTotalBytes)} held by processes that are not Cohort's (${who})`, `stop those processes on ${h.host}, or leave GPU ${g.index} out of the profile's gpus; a rank there may run out of memory`);
    }
  }
  return out;
}

/** The consistency table and the problems it shows (one per differing row). */
export function consistency(hosts: CheckHost[], plannedEngine: string): { rows: ConsistencyRow[]; problems: CheckProblem[] } {
  const rs = hosts.filter((h): h is CheckHost & { report: HostCheckReport } => !!h.report);
  const rows: ConsistencyRow[] = [];
  const problems: CheckProblem[] = [];
  const row = (what: string, value: (r: HostCheckReport) => string, breaks: ((a: string, b: string) => boolean) | boolean, hint: string, only?: (r: HostCheckReport) => boolean) => {
    const values: Record<string, string> = {};
    for (const h of rs) if (!only || only(h.report)) values[h.host] = value(h.report);
    const distinct = [...new Set(Object.values(values))];
    let verdict: ConsistencyRow['verdict'] = 'same';
    if (distinct.length > 1) {
      const isBreaking = typeof breaks === 'boolean' ? breaks : distinct.some((a) => distinct.some((b) => breaks(a, b)));
      verdict = isBreaking ? 'error' : 'warning';
      const groups = distinct.map((v) => `${v} on ${Object.keys(values).filter((k) => values[k] === v).join(', ')}`).join('; ');
      // Name the hosts that differ from the first host (the leader's side of the table).
      const first = values[rs[0]!.host];
      const odd = Object.keys(values).filter((k) => values[k] !== first);
      problems.push({ severity: verdict, host: odd.join(', ') || '*', code: `mismatch-${what.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`, message: `${what} differs between hosts: ${groups}`, hint });
    }
    if (Object.keys(values).length) rows.push({ what, values, verdict });
  };
  const major = (v: string) => /^(\d+)/.exec(v)?.[1] ?? v;
  row('Trainer bundle', (r) => r.bundleHash.slice(0, 12) || '?', true, 'deploy the same bundle everywhere: cohort deploy PROFILE --force (a run deploys it too)');
  row('Node', (r) => r.nodeVersion, false, 'install the same Node.js major version on every host');
  row('Engine', (r) => ('error' in r.engine ? 'none' : r.engine.name + (r.engine.cuda ? '+cuda' : '')), (a, b) => a.split('+')[0] !== b.split('+')[0], `every rank must run the same engine: pin --engine, or give every host the same PyTorch (planned: --engine ${plannedEngine})`);
  if (plannedEngine !== 'tfjs') {
    row('Python', (r) => r.python?.version ?? 'none', false, 'use the same Python on every host (profile host field "python")', (r) => !('error' in r.engine) && r.engine.name === 'torch');
    row('torch', (r) => r.python?.torch ?? 'none', (a, b) => major(a) !== major(b), 'install the same PyTorch major version on every host: torch.distributed does not talk across major versions', (r) => !('error' in r.engine) && r.engine.name === 'torch');
    row('CUDA (torch)', (r) => r.python?.cuda ?? 'none', false, 'use the same CUDA build of PyTorch on every host', (r) => !('error' in r.engine) && r.engine.name === 'torch');
    row('cuDNN', (r) => r.python?.cudnn ?? 'none', false, 'use the same cuDNN (comes with the PyTorch build) on every host', (r) => !('error' in r.engine) && r.engine.name === 'torch');
    row('NCCL', (r) => r.python?.nccl ?? 'none', (a, b) => major(a) !== major(b), 'use the same NCCL major version on every host (it comes with the PyTorch build)', (r) => !('error' in r.engine) && r.engine.name === 'torch' && !!r.python?.nccl);
  } else {
    row('tfjs backend', (r) => r.tfjsBackend, false, 'install the same TensorFlow binding on every host (cohort provision PROFILE), or the slowest host sets the pace');
  }
  row('GPU', (r) => (r.gpus.length ? [...new Set(r.gpus.map((g) => g.name))].join(' + ') : 'none'), false, 'mixed GPU models: the slowest sets every step; give ranks on slower GPUs smaller slots or keep them in another profile');
  row('Driver', (r) => [...new Set(r.gpus.map((g) => g.driver))].join(' + '), false, 'install the same NVIDIA driver on every host', (r) => r.gpus.length > 0);
  row('CPU', (r) => `${r.cpuModel} ×${r.cores}`, false, 'mixed CPUs: the slowest host sets every step');
  return { rows, problems };
}
