// Is tfjs-node-gpu really on a GPU? Loading the package proves nothing: its libtensorflow loads
// without CUDA, logs a missing libcudart, and runs every op on the CPU. tfjs-node's backend says
// what the binding found (`isUsingGpuDevice`, from the binding's own `isUsingGpuDevice()`); this
// module turns that, plus what the host offers (nvidia-smi, the CUDA/cuDNN libraries the dynamic
// loader can find), into the device line of `hello` and, when a GPU was asked for and not used,
// a warning that names what libtensorflow needs next to what the host has.
// `tensorflowDevice` is pure (tested with fixtures: no GPU on the machines this was written on);
// `readHostGpuFacts` is the one place that looks at the host.
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { cudaSonames, libtensorflowNeeds } from '../../util/cuda-libs';
import { describeGpu, readGpuRows, resolveCudaDevice, type GpuRow, type MigRow } from '../../util/nvidia-smi';

export interface TensorflowBackendFacts {
  /** tfjs-node's backend.isGPUPackage: the loaded package is @tensorflow/tfjs-node-gpu. */
  isGPUPackage: boolean;
  /** tfjs-node's backend.isUsingGpuDevice (undefined: the backend does not say). */
  isUsingGpuDevice?: boolean;
  /** binding.TF_Version, e.g. "2.9.1". */
  libtensorflow?: string;
}

export interface HostGpuFacts {
  /** False when nvidia-smi is missing or failed (no driver). */
  nvidiaSmi: boolean;
  gpus: GpuRow[];
  migs: MigRow[];
  /** Sonames the dynamic loader can find, e.g. ["libcudart.so.12"], ["libcudnn.so.8"]. */
  cudart: string[];
  cudnn: string[];
}

export interface DeviceTruth {
  gpu: boolean;
  device: string;
  /** Short, for the backend reason. */
  note: string;
  gpuWarning?: string;
  gpuDevice?: { index: number; uuid: string; name: string };
}

export function tensorflowDevice(be: TensorflowBackendFacts, host: HostGpuFacts | undefined, env: { CUDA_VISIBLE_DEVICES?: string; CUDA_DEVICE_ORDER?: string }, cpu: string): DeviceTruth {
  const lib = be.libtensorflow ? `libtensorflow ${be.libtensorflow}` : 'libtensorflow';
  if (!be.isGPUPackage) return { gpu: false, device: `${cpu} via ${lib} (tfjs-node, CPU build)`, note: 'CPU build' };
  if (be.isUsingGpuDevice === true) {
    // TensorFlow puts ops on its GPU:0, the first device CUDA_VISIBLE_DEVICES leaves visible.
    const r = host ? resolveCudaDevice(env, 0, host.gpus, host.migs) : { ok: false as const, reason: 'host not inspected' };
    if (r.ok) {
      const d = r.device;
      return { gpu: true, device: `CUDA ${describeGpu(d)} via ${lib} (tfjs-node-gpu)`, note: 'binding reports a GPU device', gpuDevice: { index: d.gpu.index, uuid: d.mig?.uuid ?? d.gpu.uuid, name: d.gpu.name } };
    }
    return { gpu: true, device: `CUDA GPU 0 of CUDA_VISIBLE_DEVICES=${env.CUDA_VISIBLE_DEVICES ?? '(all)'} via ${lib} (tfjs-node-gpu; not named: ${r.reason})`, note: 'binding reports a GPU device' };
  }
  const why: string[] = [];
  if (be.isUsingGpuDevice === undefined) why.push('the tensorflow backend does not say whether it uses a GPU (no isUsingGpuDevice: not tfjs-node?), so no GPU is claimed');
  if (env.CUDA_VISIBLE_DEVICES !== undefined && /^\s*(-1)?\s*$/.test(env.CUDA_VISIBLE_DEVICES)) why.push(`CUDA_VISIBLE_DEVICES=${JSON.stringify(env.CUDA_VISIBLE_DEVICES)} hides every GPU`);
  if (host && !host.nvidiaSmi) why.push('nvidia-smi is missing or failed (no NVIDIA driver?)');
  else if (host && !host.gpus.length) why.push('nvidia-smi lists no GPU');
  const needs = libtensorflowNeeds(be.libtensorflow);
  if (needs && host) {
    const missing = [host.cudart.includes(needs.cudartSoname) ? '' : needs.cudartSoname, host.cudnn.includes(needs.cudnnSoname) ? '' : needs.cudnnSoname].filter(Boolean);
    const has = `this host has ${host.cudart.length ? host.cudart.join(', ') : 'no libcudart'} and ${host.cudnn.length ? host.cudnn.join(', ') : 'no libcudnn'}`;
    if (missing.length) why.push(`${lib} needs CUDA ${needs.cuda} + cuDNN ${needs.cudnn} (${missing.join(', ')} not found by the loader); ${has}`);
    else why.push(`${lib} needs CUDA ${needs.cuda} + cuDNN ${needs.cudnn}, which the loader finds; check the rank's stderr for TensorFlow's own message`);
  } else if (!needs) {
    why.push(`${lib}: unknown CUDA/cuDNN needs (see tensorflow.org's tested build configurations for this version)`);
  }
  const gpuWarning = `asked for a GPU (tfjs-node-gpu) but running on the CPU: ${why.join('; ')}`;
  return { gpu: false, device: `${cpu} via ${lib} (tfjs-node-gpu fell back to the CPU)`, note: 'binding reports no GPU device', gpuWarning };
}

export async function readHostGpuFacts(): Promise<HostGpuFacts> {
  const rows = await readGpuRows();
  const ldconfig = await new Promise<string>((resolve) => {
    execFile('ldconfig', ['-p'], { timeout: 5000, env: { ...process.env, PATH: `${process.env.PATH ?? ''}:/sbin:/usr/sbin` } }, (err, out) => resolve(err ? '' : out));
  });
  const dirs = (process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean);
  const listings = dirs.map((d) => {
    try {
      return readdirSync(d);
    } catch {
      return [];
    }
  });
  return { nvidiaSmi: rows !== undefined, gpus: rows?.gpus ?? [], migs: rows?.migs ?? [], ...cudaSonames(ldconfig, listings) };
}
