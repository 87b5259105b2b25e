// The tfjs device check. No GPU and no tfjs-node-gpu exist here, so the boundary is faked thinly:
// a package directory named @tensorflow/tfjs-node-gpu whose backend is the CPU backend carrying
// the fields tfjs-node's NodeJSKernelBackend exposes (isGPUPackage, isUsingGpuDevice,
// binding.TF_Version), and host facts in nvidia-smi's / ldconfig's formats. Everything between
// (initBackend, the truth rules, --require-gpu) is the real code.
import * as tf from '@tensorflow/tfjs-core';
import { MathBackendCPU } from '@tensorflow/tfjs-backend-cpu';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GpuRequiredError, initBackend } from './backend';
import { tensorflowDevice, type HostGpuFacts } from './gpu-truth';
import { cudaSonames } from '../../util/cuda-libs';
import { parseGpuRows } from '../../util/nvidia-smi';

const A100S = parseGpuRows(
  [0, 1, 2, 3].map((i) => `${i}, GPU-a100000${i}-1234-5678-9abc-def012345678, NVIDIA A100-SXM4-80GB, 00000000:${(7 + i * 16).toString(16).toUpperCase().padStart(2, '0')}:00.0, 4, 81920`).join('\n'),
);
// A stock CUDA 12 host: what `ldconfig -p` prints there.
const LDCONFIG_CUDA12 = `1234 libs found in cache \`/etc/ld.so.cache'
\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9
\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12
\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6
`;
const cuda12Host: HostGpuFacts = { nvidiaSmi: true, gpus: A100S, migs: [], ...cudaSonames(LDCONFIG_CUDA12, []) };

describe('tensorflowDevice (pure rules)', () => {
  it('a GPU package whose binding reports no GPU device is the CPU, with what libtensorflow needs and what the host has', () => {
    const t = tensorflowDevice({ isGPUPackage: true, isUsingGpuDevice: false, libtensorflow: '2.9.1' }, cuda12Host, {}, 'Xeon');
    expect(t.gpu).toBe(false);
    expect(t.device).toBe('Xeon via libtensorflow 2.9.1 (tfjs-node-gpu fell back to the CPU)');
    expect(t.gpuWarning).toMatch(/needs CUDA 11\.2 \+ cuDNN 8\.1 \(libcudart\.so\.11\.0, libcudnn\.so\.8 not found by the loader\); this host has libcudart\.so\.12 and libcudnn\.so\.9/);
  });

  it('names the GPU used (index, UUID) when the binding reports one', () => {
    const t = tensorflowDevice({ isGPUPackage: true, isUsingGpuDevice: true, libtensorflow: '2.9.1' }, { ...cuda12Host, ...cudaSonames('', [['libcudart.so.11.0', 'libcudnn.so.8']]) }, { CUDA_VISIBLE_DEVICES: '2', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' }, 'Xeon');
    expect(t).toMatchObject({ gpu: true, gpuDevice: { index: 2, uuid: 'GPU-a1000002-1234-5678-9abc-def012345678', name: 'NVIDIA A100-SXM4-80GB' } });
    expect(t.device).toBe('CUDA NVIDIA A100-SXM4-80GB (GPU 2, GPU-a1000002-1234-5678-9abc-def012345678) via libtensorflow 2.9.1 (tfjs-node-gpu)');
    expect(t.gpuWarning).toBeUndefined();
  });

  it('no driver, hidden devices, and a backend that does not say are each given as the reason', () => {
    const t = tensorflowDevice({ isGPUPackage: true, isUsingGpuDevice: false, libtensorflow: '2.9.1' }, { nvidiaSmi: false, gpus: [], migs: [], cudart: [], cudnn: [] }, { CUDA_VISIBLE_DEVICES: '' }, 'Xeon');
    expect(t.gpuWarning).toMatch(/CUDA_VISIBLE_DEVICES="" hides every GPU; nvidia-smi is missing or failed/);
    expect(tensorflowDevice({ isGPUPackage: true }, cuda12Host, {}, 'Xeon').gpu).toBe(false);
    expect(tensorflowDevice({ isGPUPackage: false, libtensorflow: '2.9.1' }, undefined, {}, 'Xeon')).toMatchObject({ gpu: false, device: 'Xeon via libtensorflow 2.9.1 (tfjs-node, CPU build)' });
  });
});

describe('initBackend on a tfjs-node-gpu whose binding found no GPU', () => {
  let runtimeDir = '';
  beforeAll(() => {
    runtimeDir = mkdtempSync(join(tmpdir(), 'cohort-tfjs-gpu-'));
    const pkg = join(runtimeDir, 'node_modules', '@tensorflow', 'tfjs-node-gpu');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: '@tensorflow/tfjs-node-gpu', version: '4.22.0', main: 'index.js' }));
    writeFileSync(join(pkg, 'index.js'), "module.exports = { version: { 'tfjs-node': '4.22.0' } };\n");
    // What tfjs-node-gpu registers on a CUDA 12 host: its backend, with the binding's own answer.
    tf.registerBackend('tensorflow', () => Object.assign(new MathBackendCPU(), { isGPUPackage: true, isUsingGpuDevice: false, binding: { TF_Version: '2.9.1' } }));
  });
  afterAll(async () => {
    tf.removeBackend('tensorflow');
    await tf.setBackend('cpu');
    rmSync(runtimeDir, { recursive: true, force: true });
  });

  it('gives device cpu with the reason (not "CUDA GPU"), and no GPU memory is read', async () => {
    const info = await initBackend('tensorflow', { runtimeDir, hostGpuFacts: () => Promise.resolve(cuda12Host), env: {} });
    expect(info).toMatchObject({ name: 'tensorflow', gpu: false });
    expect(info.device).toMatch(/fell back to the CPU/);
    expect(info.device).not.toMatch(/CUDA/);
    expect(info.gpuWarning).toMatch(/libcudart\.so\.11\.0/);
    expect(info.versions).toMatchObject({ libtensorflow: '2.9.1', 'tfjs-node': '4.22.0' });
    expect(info.gpuDevice).toBeUndefined();
  });

  it('fails under --require-gpu, naming why', async () => {
    const err = await initBackend('auto', { runtimeDir, requireGpu: true, hostGpuFacts: () => Promise.resolve(cuda12Host), env: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GpuRequiredError);
    expect((err as GpuRequiredError).code).toBe('gpu-required');
    expect((err as Error).message).toMatch(/--require-gpu: this rank would run on the CPU \(asked for a GPU \(tfjs-node-gpu\) but running on the CPU: .*CUDA 11\.2/);
  });

  it('--require-gpu also refuses the CPU-only backends', async () => {
    await expect(initBackend('cpu', { requireGpu: true })).rejects.toBeInstanceOf(GpuRequiredError);
  });
});
