// A stand-in 1-GPU machine for scripts/gpu-acceptance.sh (no GPU exists here): a fake nvidia-smi
// answering as the real one does on an H100 host, and a stand-in PYTHON that records how the
// torch engine and the plain script were called and answers for them with fixed, made-up figures
// (and for Cohort's interpreter query as a CUDA torch would, so the CLI parts pick it); anything else it is asked to run (report.py, checks.py) runs on the real /usr/bin/python3. The
// figures are the stand-in's, never measurements. Used by the repository's and the kit's tests.
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const UUID = 'GPU-4a3b2c1d-1111-2222-3333-444455556666';
/** What the stand-in plain script reports per rung: 1000 img/s and the FLOPs of a ResNet-50 step per 224² image. */
export const PLAIN = { imgPerSec: 1000, flopsPerImage: 24.6e9 };

/** Writes nvidia-smi and python into `dir`; returns the stand-in python's path and a reader of its calls. */
export function standInGpu(dir: string): { python: string; calls: () => string[][] } {
  const tool = (name: string, body: string) => {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  };
  tool(
    'nvidia-smi',
    `case "$*" in
  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: ${UUID})";;
  *--query-gpu=name,memory.total,driver_version,compute_cap*) echo "NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15, 9.0";;
  *--query-gpu=index,uuid,name,compute_cap*) echo "0, ${UUID}, NVIDIA H100 80GB HBM3, 9.0";;
  *--query-gpu=name*) echo "NVIDIA H100 80GB HBM3";;
  "") echo "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |";;
  *) exit 2;;
esac`,
  );
  const calls = join(dir, 'calls');
  const hello = JSON.stringify({ v: 1, time: 1, type: 'hello', engine: 'torch', backend: 'cuda', device: `cuda:0 NVIDIA H100 80GB HBM3 (GPU 0, ${UUID})`, worldSize: 1, params: 25557032, host: 'g', capabilities: {}, versions: {} });
  const ref = JSON.stringify({ imgPerSec: PLAIN.imgPerSec, maxMemoryAllocated: 1, flopsPerImage: PLAIN.flopsPerImage });
  tool(
    'python',
    `echo "$1|$COHORT_TORCH_EXTRAS|$*" >> ${calls}
case "$1" in
  -c) case "$2" in
        *cudaVersion*) echo '{"version": "3.11.2", "prefix": "/opt/stand-in", "torch": "2.3.1+cu121", "cuda": true, "cudaVersion": "12.1", "gpus": 1}';;
        *nccl*) echo "nccl 2.21.5 tf32 cudnn True tf32 matmul False";;
        *print*) echo "torch 2.3.1+cu121 torchvision 0.18.1 cuda 12.1 cudnn 8902 available True";;
      esac; exit 0;;
esac
case "$*" in  # the agent starts the engine as python -X cohort_run=ID .../torch_engine.py ...
  *torch_engine.py*) echo '${hello}';;
  *reference.py*) echo '${ref}';;
  *) exec /usr/bin/python3 "$@";;
esac`,
  );
  return { python: join(dir, 'python'), calls: () => readFileSync(calls, 'utf8').trim().split('\n').map((l) => l.split('|')) };
}

/** The ladder the acceptance runs, in the order it runs it: [name, COHORT_TORCH_EXTRAS, engine flags after the shape, plain flags]. */
export const LADDER_RUN_ORDER: [string, string, string, string][] = [
  ['fp32', '0', '', ''],
  ['all', '1', '--fp16 --compile --warmup-steps 0', '--fp16 --extras --compile'],
  ['fp16', '0', '--fp16', '--fp16'],
  ['bf16', '0', '--bf16', '--bf16'],
  ['channels-last', '1', '', '--extras'],
  ['compile', '0', '--compile', '--compile'],
];
export const SHAPE = '--image-size 224 --batch-size 256 --steps 50 --log-steps 10 --warmup-steps 10';
