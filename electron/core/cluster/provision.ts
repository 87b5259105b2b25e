// What `cohort provision` installs on a host and how it checks the host can use it before it says
// done. tfjs-node-gpu is pinned: its libtensorflow (2.9.1 for 4.22.0) needs exactly CUDA 11.2 +
// cuDNN 8.1 (libcudart.so.11.0, libcudnn.so.8) and falls back to the CPU without them, so after
// installing, the host loads the binding and says whether it really found a GPU, and which of
// those libraries its loader finds. arm64 has no tfjs-node-gpu build: such hosts are told plainly.
import type { HostProbe } from '../../common';
import { cudaSonames, libtensorflowNeeds } from '../../../trainer/util/cuda-libs';
import { BF16_RULE, bf16Native, parseComputeCapability } from '../../../trainer/util/compute-capability';

/** The pinned tfjs-node(-gpu) release and the libtensorflow it downloads. */
export const TFJS_NODE_VERSION = '4.22.0';
export const TFJS_LIBTENSORFLOW = '2.9.1';

export interface ProvisionPlan {
  pkg: string;
  gpu: boolean;
  /** What the user should know before the install (arm64, CUDA needs). */
  notes: string[];
}

export function provisionPlan(p: HostProbe, opts: { cpu?: boolean } = {}): ProvisionPlan {
  const arm = /^(aarch64|arm64)$/.test(p.arch ?? '');
  const needs = libtensorflowNeeds(TFJS_LIBTENSORFLOW)!;
  if (opts.cpu || !p.gpus.length) return { pkg: `@tensorflow/tfjs-node@${TFJS_NODE_VERSION}`, gpu: false, notes: [] };
  if (arm) {
    return {
      pkg: `@tensorflow/tfjs-node@${TFJS_NODE_VERSION}`,
      gpu: false,
      notes: [`${p.host} is ${p.arch}: @tensorflow/tfjs-node-gpu has no ${p.arch} build, so the tfjs engine gets the CPU build here; its ${p.gpus.length} GPU(s) are usable with --engine torch and a CUDA PyTorch`, ...bf16Notes(p)],
    };
  }
  return {
    pkg: `@tensorflow/tfjs-node-gpu@${TFJS_NODE_VERSION}`,
    gpu: true,
    notes: [`tfjs-node-gpu ${TFJS_NODE_VERSION} runs libtensorflow ${TFJS_LIBTENSORFLOW}, which needs CUDA ${needs.cuda} + cuDNN ${needs.cudnn} (${needs.cudartSoname}, ${needs.cudnnSoname}); the host's driver reports CUDA ${p.gpus[0]?.cuda || '?'}`, ...bf16Notes(p)],
  };
}

/** What --bf16 (torch) will do on this host's GPUs: the agent refuses it below compute capability 8.0. */
export function bf16Notes(p: HostProbe): string[] {
  const old = p.gpus.filter((g) => {
    const cc = parseComputeCapability(g.computeCap);
    return cc && !bf16Native(cc);
  });
  const unknown = p.gpus.filter((g) => !parseComputeCapability(g.computeCap));
  return [
    ...(old.length ? [`--bf16 is refused on ${old.map((g) => `GPU ${g.index} (${g.name}, compute capability ${g.computeCap})`).join(', ')}: it needs ${BF16_RULE}; use --fp16 there`] : []),
    ...(unknown.length ? [`the driver does not report compute_cap for GPU ${unknown.map((g) => g.index).join(', ')} (before R510): --bf16 is checked by the engine at run time`] : []),
  ];
}

/** Shell run in <workdir>/runtime after the install: the loader's CUDA libraries, then the binding's own answer. */
export const PROVISION_CHECK = `(ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null); for d in $(echo "$LD_LIBRARY_PATH" | tr ':' ' '); do ls "$d" 2>/dev/null | sed 's/^/\\tFILE /'; done; node -e 'const tf = require("@tensorflow/tfjs-node-gpu"); const b = tf.backend(); console.log("COHORT_GPU_CHECK " + JSON.stringify({ isUsingGpuDevice: b.isUsingGpuDevice, libtensorflow: b.binding && b.binding.TF_Version }))' 2>&1 | tail -n 5`;

/** Reads PROVISION_CHECK's output: done only when the binding itself uses a GPU; otherwise what is missing. */
export function provisionVerdict(host: string, output: string): { ok: boolean; message: string } {
  const files = [...output.matchAll(/^\tFILE (\S+)$/gm)].map((m) => m[1]!);
  const libs = cudaSonames(output, [files]);
  const line = /COHORT_GPU_CHECK (\{.*\})/.exec(output)?.[1];
  let check: { isUsingGpuDevice?: unknown; libtensorflow?: unknown } = {};
  try {
    check = line ? (JSON.parse(line) as typeof check) : {};
  } catch {
    // reported below as "did not answer"
  }
  const needs = libtensorflowNeeds(typeof check.libtensorflow === 'string' ? check.libtensorflow : TFJS_LIBTENSORFLOW)!;
  const missing = [libs.cudart.includes(needs.cudartSoname) ? '' : needs.cudartSoname, libs.cudnn.includes(needs.cudnnSoname) ? '' : needs.cudnnSoname].filter(Boolean);
  const has = `found ${[...libs.cudart, ...libs.cudnn].join(', ') || 'no libcudart/libcudnn'}`;
  if (check.isUsingGpuDevice === true) return { ok: true, message: `${host}: tfjs-node-gpu uses the GPU (libtensorflow ${String(check.libtensorflow ?? TFJS_LIBTENSORFLOW)}; ${has})` };
  const why = line === undefined ? 'the binding did not load (see the output above)' : 'the binding loaded but found no GPU: it would train on the CPU';
  return {
    ok: false,
    message: `${host}: installed, but NOT usable on the GPU: ${why}; libtensorflow ${String(check.libtensorflow ?? TFJS_LIBTENSORFLOW)} needs CUDA ${needs.cuda} + cuDNN ${needs.cudnn}${missing.length ? ` (${missing.join(', ')} not found by the loader; ${has})` : ` (${has})`}. Install CUDA ${needs.cuda} runtime + cuDNN ${needs.cudnn} libraries (they may sit beside a newer CUDA) and put them on LD_LIBRARY_PATH in the host's env, or use --engine torch with a CUDA PyTorch`,
  };
}
