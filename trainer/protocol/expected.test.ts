import { describe, expect, it } from 'vitest';
import { mfuEstimate, resnet50ForwardMacs, resnet50TrainFlopsPerImage, scalingEfficiency } from './expected';

describe('expected vs achieved (pure)', () => {
  it('counts ResNet-50 at 224 px as torchvision does (4.09 G multiply-adds forward), and scales with the image', () => {
    expect(resnet50ForwardMacs(224, 'imagenet', 1000, 1) / 1e9).toBeCloseTo(4.09, 1);
    expect(resnet50TrainFlopsPerImage(224, 'imagenet', 1000, 1)).toBeCloseTo(6 * resnet50ForwardMacs(224, 'imagenet', 1000, 1));
    // the cifar stem keeps 32 px at full resolution into layer1: as costly as 128 px with the imagenet stem
    expect(resnet50ForwardMacs(32, 'cifar', 100, 1) / resnet50ForwardMacs(128, 'imagenet', 100, 1)).toBeCloseTo(1, 1);
  });

  it('--width scales every conv: ×2 costs about 4× the multiply-adds, ×1/4 about 1/16', () => {
    const at = (w: number) => resnet50ForwardMacs(224, 'imagenet', 1000, w);
    expect(at(2) / at(1)).toBeGreaterThan(3.5);
    expect(at(2) / at(1)).toBeLessThan(4);
    expect(at(0.25) / at(1)).toBeGreaterThan(1 / 17);
    expect(at(0.25) / at(1)).toBeLessThan(1 / 12);
  });

  it('estimates MFU from the GPU table by the device name and dtype; unknown GPU → none', () => {
    const perImage = resnet50TrainFlopsPerImage(224, 'imagenet', 1000, 1);
    const m = mfuEstimate({ device: 'CUDA NVIDIA A100-SXM4-80GB (GPU 0, GPU-…)', gpus: 8, dtype: 'bf16', samplesPerSec: 2000, imageSize: 224, stem: 'imagenet', classes: 1000, width: 1 })!;
    expect(m).toMatchObject({ gpu: 'A100', dtype: 'bf16', peakTflopsPerGpu: 312 });
    expect(m.mfu).toBeCloseTo((2000 * perImage) / 1e12 / (312 * 8), 6);
    expect(mfuEstimate({ device: 'NVIDIA H100 PCIe', gpus: 1, dtype: 'fp16', samplesPerSec: 1, imageSize: 224, stem: 'imagenet', classes: 1000, width: 1 })?.gpu).toBe('H100 PCIe');
    expect(mfuEstimate({ device: 'NVIDIA V100', gpus: 1, dtype: 'tf32', samplesPerSec: 1, imageSize: 224, stem: 'imagenet', classes: 1000, width: 1 })).toMatchObject({ dtype: 'fp32', peakTflopsPerGpu: 15.7 }); // no TF32 on Volta
    expect(mfuEstimate({ device: 'Some Future GPU', gpus: 1, dtype: 'fp32', samplesPerSec: 1, imageSize: 32, stem: 'cifar', classes: 10, width: 1 })).toBeUndefined();
  });

  it('scaling: global ÷ (world × one-rank rate), with the source; unknown without one', () => {
    expect(scalingEfficiency(150, 3, { samplesPerSec: 60, source: 'history', fromRun: 'r1' })).toEqual({ scaling: 150 / 180, oneRankSamplesPerSec: 60, source: 'history', fromRun: 'r1' });
    expect(scalingEfficiency(150, 3, undefined)).toEqual({ scaling: null, oneRankSamplesPerSec: null, source: 'unknown' });
  });
});
