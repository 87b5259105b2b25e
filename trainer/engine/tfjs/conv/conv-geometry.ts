// A convolution's shape, shared by the dispatcher (conv-kernels.ts) and every implementation
// (conv-gemm, conv-taps, conv-winograd): its own module so the implementations need not import
// the dispatcher that imports them.
import type { ConvGeometry } from '../../../protocol/resnet50-shape';

export type { ConvGeometry };

export function convGeometry(inSize: number, cin: number, cout: number, k: number, stride: number, pad: number): ConvGeometry {
  const outSize = Math.floor((inSize + 2 * pad - k) / stride) + 1;
  if (outSize < 1) throw new Error(`conv ${k}×${k}/${stride}: input side ${inSize} is too small (output side ${outSize}); use a larger --image-size`);
  return { inSize, outSize, cin, cout, k, stride, pad };
}

/** Only the centre tap of the filter ever meets real data (1×1 input, "same" padding): the conv is a matMul. */
export function centerOnly(g: ConvGeometry): boolean {
  return g.inSize === 1 && g.outSize === 1 && g.k % 2 === 1 && g.pad === (g.k - 1) / 2;
}
