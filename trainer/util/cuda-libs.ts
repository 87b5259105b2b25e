// What libtensorflow needs from CUDA, and which CUDA libraries a host's dynamic loader finds. Pure:
// shared by the tfjs engine's device check (trainer/engine/tfjs/gpu-truth.ts) and `cohort provision`.

/** What each libtensorflow that tfjs-node-gpu ships needs (tensorflow.org's tested build configurations). */
export const LIBTENSORFLOW_NEEDS: Record<string, { cuda: string; cudnn: string; cudartSoname: string; cudnnSoname: string }> = {
  '2.9': { cuda: '11.2', cudnn: '8.1', cudartSoname: 'libcudart.so.11.0', cudnnSoname: 'libcudnn.so.8' },
  '2.7': { cuda: '11.2', cudnn: '8.1', cudartSoname: 'libcudart.so.11.0', cudnnSoname: 'libcudnn.so.8' },
};

export function libtensorflowNeeds(version: string | undefined): (typeof LIBTENSORFLOW_NEEDS)[string] | undefined {
  const mm = /^(\d+\.\d+)/.exec(version ?? '')?.[1];
  return mm ? LIBTENSORFLOW_NEEDS[mm] : undefined;
}

/** Sonames of libcudart / libcudnn in `ldconfig -p` output and in the given directories' listings. */
export function cudaSonames(ldconfig: string, dirListings: string[][]): { cudart: string[]; cudnn: string[] } {
  const names = new Set<string>();
  for (const line of ldconfig.split('\n')) {
    const m = /^\s*(lib(?:cudart|cudnn)\.so\.[\d.]+)\s/.exec(line);
    if (m) names.add(m[1]!);
  }
  for (const files of dirListings) for (const f of files) if (/^lib(?:cudart|cudnn)\.so\.[\d.]+$/.test(f)) names.add(f);
  const sorted = [...names].sort();
  return { cudart: sorted.filter((n) => n.startsWith('libcudart')), cudnn: sorted.filter((n) => n.startsWith('libcudnn')) };
}

