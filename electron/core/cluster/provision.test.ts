// Host answers are fixtures in the formats the host prints (ldconfig -p, the check's JSON line): no GPU here.
import { describe, expect, it } from 'vitest';
import type { HostProbe } from '../../common';
import { TFJS_NODE_VERSION, provisionPlan, provisionVerdict } from './provision';

const probe = (arch: string, gpus: number): HostProbe => ({
  host: 'g1', ok: true, probedAt: '', arch, tfjsNode: false, tfjsNodeGpu: false,
  gpus: Array.from({ length: gpus }, (_, i) => ({ index: i, name: 'NVIDIA A100', memoryBytes: 1, driver: '550.54', cuda: '12.4' })),
});

describe('cohort provision', () => {
  it('pins tfjs-node-gpu and states its CUDA/cuDNN needs; arm64 GPU hosts are told they get the CPU build', () => {
    const x86 = provisionPlan(probe('x86_64', 2));
    expect(x86.pkg).toBe(`@tensorflow/tfjs-node-gpu@${TFJS_NODE_VERSION}`);
    expect(x86.notes.join()).toMatch(/needs CUDA 11\.2 \+ cuDNN 8\.1 .*driver reports CUDA 12\.4/);
    const arm = provisionPlan(probe('aarch64', 1));
    expect(arm).toMatchObject({ pkg: `@tensorflow/tfjs-node@${TFJS_NODE_VERSION}`, gpu: false });
    expect(arm.notes.join()).toMatch(/no aarch64 build.*CPU build/);
    expect(provisionPlan(probe('x86_64', 0)).pkg).toBe(`@tensorflow/tfjs-node@${TFJS_NODE_VERSION}`);
  });

  it('says before installing where --bf16 will be refused (compute capability below 8.0) or cannot be checked', () => {
    const p = probe('x86_64', 3);
    p.gpus[0]!.computeCap = '7.0';
    p.gpus[0]!.name = 'Tesla V100-SXM2-16GB';
    p.gpus[1]!.computeCap = '8.0';
    const notes = provisionPlan(p).notes.join('\n');
    expect(notes).toMatch(/--bf16 is refused on GPU 0 \(Tesla V100-SXM2-16GB, compute capability 7\.0\): it needs compute capability ≥ 8\.0/);
    expect(notes).toMatch(/does not report compute_cap for GPU 2 /);
    expect(notes).not.toMatch(/GPU 1\b/);
  });

  it('is not done on a CUDA 12 host where the binding finds no GPU, and says what is missing', () => {
    const out = '\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12\n\tFILE libcudnn.so.9\nCOHORT_GPU_CHECK {"isUsingGpuDevice":false,"libtensorflow":"2.9.1"}\n';
    const v = provisionVerdict('g1', out);
    expect(v.ok).toBe(false);
    expect(v.message).toMatch(/NOT usable on the GPU: the binding loaded but found no GPU.*libcudart\.so\.11\.0, libcudnn\.so\.8 not found by the loader; found libcudart\.so\.12, libcudnn\.so\.9/);
    expect(provisionVerdict('g1', 'Error: libcudart.so.11.0: cannot open shared object file').message).toMatch(/did not load/);
    const good = provisionVerdict('g1', '\tlibcudart.so.11.0 (libc6,x86-64) => /x\n\tFILE libcudnn.so.8\nCOHORT_GPU_CHECK {"isUsingGpuDevice":true,"libtensorflow":"2.9.1"}\n');
    expect(good).toMatchObject({ ok: true });
  });
});
