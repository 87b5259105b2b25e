// Expected vs achieved (issue 21 item 3), pure: scaling efficiency of a run against a one-rank rate
// of the same configuration (and where that rate came from), and on GPUs an MFU *estimate*:
// ResNet-50 training FLOPs per image at the run's image size × images/s ÷ the GPUs' peak for the
// dtype the run computed in (table below, with sources). Clients (Live, History, Compare, CLI) show
// these; nothing here measures.
import { resnet50Convs, type ResNetDepth } from './resnet50-shape';

/** Multiply-accumulates of one forward pass of one image at channel width `width` and depth `depth` (convolutions and the classifier; BN, ReLU, pooling are < 1% and left out). */
export function resnet50ForwardMacs(imageSize: number, stem: 'imagenet' | 'cifar', classes: number, width: number, depth: ResNetDepth = '50'): number {
  const { convs, features } = resnet50Convs(stem, imageSize, width, depth);
  return convs.reduce((m, c) => m + c.outSize * c.outSize * c.cin * c.cout * c.k * c.k, 0) + features * classes;
}

/**
 * FLOPs of one training step per image: forward + backward (input and weight gradients, each about
 * the forward's cost) = 3 × forward, 2 FLOPs per multiply-accumulate. At 224 px with 1000 classes
 * the forward is 4.1 GMACs, the figure torchvision's model card gives (4.09 GFLOPS, counted as MACs).
 */
export function resnet50TrainFlopsPerImage(imageSize: number, stem: 'imagenet' | 'cifar', classes: number, width: number, depth: ResNetDepth = '50'): number {
  return 3 * 2 * resnet50ForwardMacs(imageSize, stem, classes, width, depth);
}

export type ComputeDtype = 'fp32' | 'tf32' | 'fp16' | 'bf16';

/**
 * Dense peak TFLOPS per GPU (no sparsity), from NVIDIA's datasheets:
 * - A100 SXM4: https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (FP32 19.5, TF32 156, FP16/BF16 312)
 * - H100 SXM5 / H200: https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet and
 *   https://www.nvidia.com/en-us/data-center/h200/ (FP32 67, TF32 494.5, FP16/BF16 989.5: the datasheets' 989/1979 with sparsity, halved)
 * - H100 PCIe: same datasheet (FP32 51, TF32 378, FP16/BF16 756)
 * - V100 SXM2: https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf (FP32 15.7, FP16 tensor 125; no TF32/BF16)
 * - T4: https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf (FP32 8.1, FP16 65)
 * - A10: https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/datasheet-new/nvidia-a10-datasheet.pdf (FP32 31.2, TF32 62.5, FP16/BF16 125)
 * - L4: https://www.nvidia.com/en-us/data-center/l4/ (FP32 30.3, TF32 60, FP16/BF16 121: the page's sparse figures halved)
 * - L40S: https://www.nvidia.com/en-us/data-center/l40s/ (FP32 91.6, TF32 183, FP16/BF16 362)
 * A name is matched by the first entry whose pattern it contains (so "H100 PCIe" comes before "H100").
 */
export const GPU_PEAK_TFLOPS: readonly { match: RegExp; name: string; peak: Partial<Record<ComputeDtype, number>> }[] = [
  { match: /A100/i, name: 'A100', peak: { fp32: 19.5, tf32: 156, fp16: 312, bf16: 312 } },
  { match: /H100.*PCIe/i, name: 'H100 PCIe', peak: { fp32: 51, tf32: 378, fp16: 756, bf16: 756 } },
  { match: /H100|H200|GH200/i, name: 'H100/H200 SXM', peak: { fp32: 67, tf32: 494.5, fp16: 989.5, bf16: 989.5 } },
  { match: /V100/i, name: 'V100', peak: { fp32: 15.7, fp16: 125 } },
  { match: /\bT4\b/i, name: 'T4', peak: { fp32: 8.1, fp16: 65 } },
  { match: /\bA10\b/i, name: 'A10', peak: { fp32: 31.2, tf32: 62.5, fp16: 125, bf16: 125 } },
  { match: /L40S/i, name: 'L40S', peak: { fp32: 91.6, tf32: 183, fp16: 362, bf16: 362 } },
  { match: /\bL4\b/i, name: 'L4', peak: { fp32: 30.3, tf32: 60, fp16: 121, bf16: 121 } },
];

export interface MfuEstimate {
  /** Model FLOPs utilisation, 0..1: an estimate (FLOPs counted analytically, peak from the table). */
  mfu: number;
  gpu: string;
  dtype: ComputeDtype;
  peakTflopsPerGpu: number;
  achievedTflops: number;
}

/** MFU over `gpus` devices of one model (device string as the engine reports it); undefined when the GPU or its dtype peak is not in the table. */
export function mfuEstimate(o: { device: string; gpus: number; dtype: ComputeDtype; samplesPerSec: number; imageSize: number; stem: 'imagenet' | 'cifar'; classes: number; width: number; depth?: ResNetDepth }): MfuEstimate | undefined {
  const row = GPU_PEAK_TFLOPS.find((g) => g.match.test(o.device));
  const peak = row?.peak[o.dtype] ?? (o.dtype === 'tf32' ? row?.peak.fp32 : undefined);
  if (!row || !peak || o.gpus < 1) return undefined;
  const achievedTflops = (o.samplesPerSec * resnet50TrainFlopsPerImage(o.imageSize, o.stem, o.classes, o.width, o.depth)) / 1e12;
  return { mfu: achievedTflops / (peak * o.gpus), gpu: row.name, dtype: row.peak[o.dtype] ? o.dtype : 'fp32', peakTflopsPerGpu: peak, achievedTflops };
}

/** Where the one-rank rate of the same configuration came from. */
export type BaselineSource = 'check' | 'history' | 'unknown';

export interface ScalingEstimate {
  /** Global rate ÷ (world × one-rank rate); null when the one-rank rate is unknown. */
  scaling: number | null;
  oneRankSamplesPerSec: number | null;
  source: BaselineSource;
  /** The History run the one-rank rate is that run's median of (source 'history'). */
  fromRun?: string;
}

export function scalingEfficiency(globalSamplesPerSec: number, worldSize: number, baseline: { samplesPerSec: number; source: 'check' | 'history'; fromRun?: string } | undefined): ScalingEstimate {
  if (!baseline || !(baseline.samplesPerSec > 0) || worldSize < 1) return { scaling: null, oneRankSamplesPerSec: null, source: 'unknown' };
  return { scaling: globalSamplesPerSec / (worldSize * baseline.samplesPerSec), oneRankSamplesPerSec: baseline.samplesPerSec, source: baseline.source, ...(baseline.fromRun ? { fromRun: baseline.fromRun } : {}) };
}
