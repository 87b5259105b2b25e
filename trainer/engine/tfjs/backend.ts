// Backend selection for the tfjs engine: tensorflow (tfjs-node-gpu / tfjs-node, loaded at run time
// only if the host has it: their install downloads libtensorflow, so they are never our
// dependency), wasm (SIMD, bundled) and cpu (pure JS, bundled). `auto` tries them in that order;
// an explicit choice that is unavailable fails loudly, naming --backend and what to install.
import { CohortError } from '../../protocol/errors';
import * as tf from '@tensorflow/tfjs-core';
import { version_cpu } from '@tensorflow/tfjs-backend-cpu';
import { setWasmPaths, version_wasm } from '@tensorflow/tfjs-backend-wasm';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Capability } from '../../protocol/events';
import { gemmInfo } from './kernels/gemm-kernels';
import type { BackendChoice } from '../../protocol/train-config';
import { tensorflowDevice, readHostGpuFacts, type HostGpuFacts, type TensorflowBackendFacts } from './gpu-truth';

export interface BackendInfo {
  name: 'tensorflow' | 'wasm' | 'cpu';
  device: string;
  /** True only when the binding itself says it runs on a GPU (tfjs-node-gpu's isUsingGpuDevice). */
  gpu: boolean;
  /** Why this backend, e.g. "auto: @tensorflow/tfjs-node-gpu not installed; wasm SIMD available". */
  reason: string;
  versions: Record<string, string>;
  /** Set when a GPU was asked for (tfjs-node-gpu loaded, or --require-gpu) and the rank runs on the CPU: why, and what the host needs. */
  gpuWarning?: string;
  /** The GPU used, when `gpu` and nvidia-smi could name it. */
  gpuDevice?: { index: number; uuid: string; name: string };
}

export interface InitBackendOptions {
  /** Directory holding tfjs-backend-wasm's .wasm files (default: the package's dist/). */
  wasmDir?: string;
  log?: (m: string) => void;
  /** Where to look for tfjs-node(-gpu) besides normal resolution (default: $COHORT_RUNTIME_DIR). */
  runtimeDir?: string;
  /** --require-gpu: refuse to start (GpuRequiredError) unless the backend really runs on a GPU. */
  requireGpu?: boolean;
  /** What the host offers (nvidia-smi, CUDA libraries); default: read them (gpu-truth.ts). Tests pass fixtures. */
  hostGpuFacts?: () => Promise<HostGpuFacts>;
  /** CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER of this rank (default: process.env). */
  env?: NodeJS.ProcessEnv;
}

export class BackendUnavailableError extends CohortError {
  constructor(message: string, hint: string, options?: { cause?: unknown }) {
    super('backend-unavailable', `${message}. ${hint}`, { hint, ...options });
    this.name = 'BackendUnavailableError';
  }
}

/** --require-gpu (or the profile's requireGpu) and the rank would run on the CPU. */
export class GpuRequiredError extends CohortError {
  declare readonly hint: string;
  constructor(
    readonly detail: string,
    hint: string,
  ) {
    super('gpu-required', `--require-gpu: this rank would run on the CPU (${detail}). ${hint}`, { hint });
    this.name = 'GpuRequiredError';
  }
}

const WASM_FILES = ['tfjs-backend-wasm.wasm', 'tfjs-backend-wasm-simd.wasm'];
const NODE_PACKAGES = ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'] as const;

function cpuModel(): string {
  return os.cpus()[0]?.model.trim() ?? 'unknown cpu';
}

/** Resolve a package from normal module resolution, then from <runtimeDir>/node_modules. */
function resolvePackage(name: string, runtimeDir: string | undefined): string | null {
  const bases = [import.meta.url, ...(runtimeDir ? [path.join(runtimeDir, 'noop.js')] : [])];
  for (const base of bases) {
    try {
      return createRequire(base).resolve(name);
    } catch {
      // not installed there
    }
  }
  return null;
}

function defaultWasmDir(): string | null {
  const main = resolvePackage('@tensorflow/tfjs-backend-wasm', undefined);
  return main ? path.dirname(main) : null;
}

interface Attempt {
  ok: boolean;
  note: string;
  info?: BackendInfo;
}

async function tryTensorflow(runtimeDir: string | undefined, log: (m: string) => void, facts: () => Promise<HostGpuFacts>, env: NodeJS.ProcessEnv): Promise<Attempt> {
  const notes: string[] = [];
  for (const pkg of NODE_PACKAGES) {
    const resolved = resolvePackage(pkg, runtimeDir);
    if (!resolved) {
      notes.push(`${pkg} not installed`);
      continue;
    }
    try {
      // Loading registers the 'tensorflow' backend in tfjs's global registry, which every copy of tfjs-core shares.
      // require, not import(): tfjs-node is CommonJS, and the rank runs as a vm.Script (trainer/util/code-cache.ts), which has no import().
      const mod: unknown = createRequire(import.meta.url)(resolved);
      if (!(await tf.setBackend('tensorflow'))) throw new Error(`${pkg} loaded but the 'tensorflow' backend did not initialise`);
      await tf.ready();
      const versions: Record<string, string> = { 'tfjs-core': tf.version_core, node: process.versions.node };
      const v = (mod as { version?: Record<string, unknown> }).version;
      if (v && typeof v === 'object') for (const [k, val] of Object.entries(v)) if (typeof val === 'string') versions[k] = val;
      // Ask the binding, not the package name: libtensorflow loads without CUDA and then runs on the CPU.
      const observed = readTensorflowBackend(pkg);
      if (observed.libtensorflow) versions['libtensorflow'] = observed.libtensorflow;
      const truth = tensorflowDevice(observed, observed.isGPUPackage ? await facts() : undefined, env, cpuModel());
      log(`tfjs backend: tensorflow via ${pkg} (${resolved}); device: ${truth.device}${truth.gpuWarning ? ` — ${truth.gpuWarning}` : ''}`);
      return {
        ok: true,
        note: `${pkg} loaded (${truth.note})`,
        info: { name: 'tensorflow', gpu: truth.gpu, device: truth.device, reason: '', versions, ...(truth.gpuWarning ? { gpuWarning: truth.gpuWarning } : {}), ...(truth.gpuDevice ? { gpuDevice: truth.gpuDevice } : {}) },
      };
    } catch (e) {
      notes.push(`${pkg} failed to load: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return { ok: false, note: notes.join('; ') };
}

/** What the registered 'tensorflow' backend says about itself (tfjs-node's NodeJSKernelBackend fields, checked at run time). */
function readTensorflowBackend(pkg: string): TensorflowBackendFacts {
  const be = tf.backend() as unknown as { isGPUPackage?: unknown; isUsingGpuDevice?: unknown; binding?: { TF_Version?: unknown } };
  return {
    isGPUPackage: typeof be.isGPUPackage === 'boolean' ? be.isGPUPackage : pkg === '@tensorflow/tfjs-node-gpu',
    ...(typeof be.isUsingGpuDevice === 'boolean' ? { isUsingGpuDevice: be.isUsingGpuDevice } : {}),
    ...(typeof be.binding?.TF_Version === 'string' ? { libtensorflow: be.binding.TF_Version } : {}),
  };
}

async function tryWasm(wasmDir: string | undefined, log: (m: string) => void): Promise<Attempt> {
  const dir = wasmDir ?? defaultWasmDir();
  if (!dir) return { ok: false, note: 'wasm: cannot locate @tensorflow/tfjs-backend-wasm/dist (pass wasmDir)' };
  const missing = WASM_FILES.filter((f) => !existsSync(path.join(dir, f)));
  if (missing.length) return { ok: false, note: `wasm: ${missing.join(', ')} missing in ${dir}` };
  try {
    setWasmPaths(dir.endsWith(path.sep) ? dir : dir + path.sep);
    if (!(await tf.setBackend('wasm'))) return { ok: false, note: `wasm: backend failed to initialise from ${dir}` };
    await tf.ready();
    const simd = (await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT')) === true;
    log(`tfjs backend: wasm (${simd ? 'SIMD' : 'no SIMD'}) from ${dir}`);
    return {
      ok: true,
      note: `wasm ${simd ? 'SIMD' : '(no SIMD)'} available`,
      // tfjs forces wasm multithreading off under Node (tfjs#3830): one thread per rank.
      info: { name: 'wasm', gpu: false, device: `${cpuModel()} (wasm${simd ? ' SIMD' : ''}, 1 thread)`, reason: '', versions: { 'tfjs-core': tf.version_core, 'tfjs-backend-wasm': version_wasm, node: process.versions.node } },
    };
  } catch (e) {
    return { ok: false, note: `wasm: ${e instanceof Error ? e.message : String(e)}` };
  }
}

async function tryCpu(log: (m: string) => void): Promise<Attempt> {
  if (!(await tf.setBackend('cpu'))) return { ok: false, note: 'cpu: backend failed to initialise' };
  await tf.ready();
  log('tfjs backend: cpu (pure JS)');
  return {
    ok: true,
    note: 'cpu (pure JS) available',
    info: { name: 'cpu', gpu: false, device: `${cpuModel()} (pure JS, 1 thread)`, reason: '', versions: { 'tfjs-core': tf.version_core, 'tfjs-backend-cpu': version_cpu, node: process.versions.node } },
  };
}

export async function initBackend(choice: BackendChoice, opts: InitBackendOptions = {}): Promise<BackendInfo> {
  const info = await pickBackend(choice, opts);
  if (opts.requireGpu && !info.gpu) {
    throw new GpuRequiredError(
      info.gpuWarning ?? `backend ${info.name} on ${info.device}`,
      info.name === 'tensorflow'
        ? 'Give the host what its libtensorflow needs (see the detail), or run without --require-gpu (profile: requireGpu)'
        : 'Install @tensorflow/tfjs-node-gpu on the host (cohort provision --gpu) with the CUDA/cuDNN it needs, use --engine torch with a CUDA PyTorch, or run without --require-gpu',
    );
  }
  return info;
}

async function pickBackend(choice: BackendChoice, opts: InitBackendOptions): Promise<BackendInfo> {
  const log = opts.log ?? (() => undefined);
  const facts = opts.hostGpuFacts ?? readHostGpuFacts;
  const env = opts.env ?? process.env;
  const runtimeDir = opts.runtimeDir ?? process.env['COHORT_RUNTIME_DIR'];
  const install = runtimeDir ? `npm install --prefix ${runtimeDir} @tensorflow/tfjs-node` : 'npm install @tensorflow/tfjs-node (or -gpu with CUDA) on the host, or set COHORT_RUNTIME_DIR to a directory whose node_modules has it';
  switch (choice) {
    case 'tensorflow': {
      const a = await tryTensorflow(runtimeDir, log, facts, env);
      if (!a.ok || !a.info) throw new BackendUnavailableError(`--backend tensorflow: unavailable on this host (${a.note})`, `Install it (${install}), or use --backend wasm / auto`);
      return { ...a.info, reason: `--backend tensorflow: ${a.note}` };
    }
    case 'wasm': {
      const a = await tryWasm(opts.wasmDir, log);
      if (!a.ok || !a.info) throw new BackendUnavailableError(`--backend wasm: unavailable (${a.note})`, 'Reinstall the trainer bundle (the .wasm files ship beside it), or use --backend cpu / auto');
      return { ...a.info, reason: `--backend wasm: ${a.note}` };
    }
    case 'cpu': {
      const a = await tryCpu(log);
      if (!a.ok || !a.info) throw new BackendUnavailableError(`--backend cpu: unavailable (${a.note})`, 'This should not happen: the cpu backend is bundled; reinstall the trainer');
      return { ...a.info, reason: '--backend cpu: requested (pure JS: slow for ResNet-50)' };
    }
    case 'auto': {
      const notes: string[] = [];
      for (const attempt of [() => tryTensorflow(runtimeDir, log, facts, env), () => tryWasm(opts.wasmDir, log), () => tryCpu(log)]) {
        const a = await attempt();
        notes.push(a.note);
        if (a.ok && a.info) return { ...a.info, reason: `auto: ${notes.join('; ')}` };
      }
      throw new BackendUnavailableError(`--backend auto: no tfjs backend could start (${notes.join('; ')})`, 'Reinstall the trainer bundle');
    }
  }
}

/** What the tfjs engine can and cannot do on this backend, said plainly. */
export function tfjsCapabilities(info: BackendInfo): Record<string, Capability> {
  const gemm = info.name === 'wasm' ? gemmInfo() : null;
  return {
    fp16: { available: false, detail: `fp16 compute: unavailable on backend ${info.name} (tfjs has no float16 tensors); training runs in fp32` },
    bf16: { available: false, detail: `bf16 compute: unavailable on backend ${info.name} (tfjs has no bfloat16 tensors)` },
    compile: {
      available: true,
      detail: `--compile on ${info.name}: per-layer autotune of the conv gradient kernels (times each candidate on the real shapes, keeps the fastest); not a graph compiler (tfjs has no XLA/jit)${gemm ? `; ${gemm.detail}` : ''}`,
    },
    fma: gemm
      ? { available: gemm.fma, detail: `${gemm.detail} (the conv 'gemm' kernels; tfjs's own XNNPACK kernels are built without FMA)` }
      : { available: info.name === 'tensorflow', detail: info.name === 'tensorflow' ? 'libtensorflow uses FMA where the CPU has it' : 'fma: unavailable on the pure-JS cpu backend' },
    fp16Transport: { available: true, detail: 'fp16 gradient exchange is done by the collectives (engine-independent); compute stays fp32' },
    channelsLast: { available: true, detail: 'NHWC is tfjs\'s native layout (always on)' },
    peakMemory: { available: true, detail: peakMemoryDetail(info) },
  };
}

/** What step.memory's peakTensorBytes (and the GPU figures) measure on this backend. */
function peakMemoryDetail(info: BackendInfo): string {
  const peak = 'peakTensorBytes: the highest tf.memory().numBytes since warm-up (every tensor allocation counted, not sampled)';
  if (info.name === 'wasm') return `${peak}; the wasm heap around it grows to its allocator's high-water mark and never shrinks (part of rssBytes)`;
  if (info.name === 'tensorflow' && info.gpu) return `${peak}; libtensorflow's GPU allocator holds more: this process's own bytes on its GPU are gpuProcessBytes (nvidia-smi, by pid and UUID)`;
  if (info.name === 'tensorflow') return `${peak}; libtensorflow's CPU allocator holds more (part of rssBytes)`;
  return `${peak}; the pure-JS backend keeps tensors in JS arrays (part of rssBytes)`;
}
