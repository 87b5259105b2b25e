// The prediction's model: ring bytes per rank, exchange over the slowest ring link, scaling, and a
// bottleneck sentence naming that link.
import { describe, expect, it } from 'vitest';
import type { CheckLink } from '../../../trainer/protocol/check';
import { resnet50Spec } from '../../../trainer/engine/tfjs';
import { RESNET_DEPTHS, resnet50ParamCount as paramCount } from '../../../trainer/protocol';
import { predict, ringBytesPerRank } from './predict';

const cfg = { stem: 'cifar' as const, imageSize: 8, classes: 10, width: 1, depth: '50' as const, fp16: false, engine: 'tfjs' as const };
const links: CheckLink[] = [
  { from: 'h1', to: 'h2', mbps: 3000, latencyMs: 0.2, kind: 'ring' },
  { from: 'h2', to: 'h3', mbps: 48, latencyMs: 2, kind: 'ring' },
  { from: 'h3', to: 'h1', mbps: 50, latencyMs: 2, kind: 'ring' },
  { from: 'h2', to: 'h1', mbps: 0, latencyMs: 0.2, kind: 'rendezvous' },
];

describe('check prediction', () => {
  it("the parameter count equals the tfjs model spec's, for both stems, several class counts and widths; torchvision's at width 1", () => {
    for (const stem of ['cifar', 'imagenet'] as const) for (const classes of [2, 10, 100, 1000]) for (const width of [0.25, 0.3, 1, 2]) expect(paramCount({ stem, classes, width })).toBe(resnet50Spec(stem, 64, classes, width).paramCount);
    expect(paramCount({ stem: 'imagenet', classes: 1000, width: 1 })).toBe(25_557_032);
  });

  it("every --depth: the count equals the tfjs model spec's; torchvision's resnet50/101/152 and ResNet(Bottleneck, [1,1,1,1] / [2,2,2,2]) at width 1", () => {
    for (const depth of RESNET_DEPTHS) for (const stem of ['cifar', 'imagenet'] as const) for (const width of [0.25, 1]) expect(paramCount({ stem, classes: 10, width, depth })).toBe(resnet50Spec(stem, 64, 10, width, depth).paramCount);
    // torchvision 0.14, summed over model.parameters() (1000 classes, imagenet stem)
    const torchvision = { '14': 10_064_936, '26': 15_995_176, '50': 25_557_032, '101': 44_549_160, '152': 60_192_808 };
    for (const depth of RESNET_DEPTHS) expect(paramCount({ stem: 'imagenet', classes: 1000, width: 1, depth }), `depth ${depth}`).toBe(torchvision[depth]);
    expect(paramCount({ stem: 'imagenet', classes: 1000, width: 1 })).toBe(paramCount({ stem: 'imagenet', classes: 1000, width: 1, depth: '50' })); // the default
    expect(() => resnet50Spec('cifar', 8, 10, 1, '34' as never)).toThrow(/--depth/);
  });

  it('ResNet-50 (cifar stem, 10 classes) has about 23.5 M parameters; a ring of 3 sends 4/3 of them per rank', () => {
    const p = paramCount(cfg);
    expect(p).toBeGreaterThan(23_400_000);
    expect(p).toBeLessThan(23_600_000);
    expect(ringBytesPerRank(p, 3, false)).toBe(Math.round((4 * p * 4) / 3));
    expect(ringBytesPerRank(p, 3, true)).toBe(Math.round((4 * p * 2) / 3));
    expect(ringBytesPerRank(p, 1, false)).toBe(0);
  });

  it('names the slowest ring link and the fp16 remedy when the exchange dominates', () => {
    const r = predict({ config: cfg, worldSize: 3, computeMs: 400, computeSource: 'measured', links });
    const bytes = ringBytesPerRank(paramCount(cfg), 3, false);
    expect(r.exchangeMs).toBeCloseTo((bytes * 8) / 48e3 + 2 * 2, 0);
    expect(r.stepMs).toBeCloseTo(400 + r.exchangeMs, 0);
    expect(r.scaling).toBeCloseTo(400 / r.stepMs, 3);
    expect(r.bottleneck).toMatch(/^h2↔h3 at 48 Mbit\/s: exchange 20\.9 s vs compute 400 ms per step; --fp16 halves it$/);
    const half = predict({ config: { ...cfg, fp16: true }, worldSize: 3, computeMs: 400, computeSource: 'measured', links });
    expect(half.wire).toBe('fp16');
    expect(half.gradientBytes).toBeCloseTo(r.gradientBytes / 2, -1);
    expect(half.bottleneck).not.toContain('--fp16');
  });

  it('says compute when compute dominates', () => {
    const fast = links.map((l) => ({ ...l, mbps: 100_000 }));
    expect(predict({ config: cfg, worldSize: 3, computeMs: 4000, computeSource: 'm', links: fast }).bottleneck).toMatch(/^compute: 4\.0 s per step/);
  });

  it('ranks that share cores: the step uses their compute measured at once, the scaling stays against one rank alone', () => {
    const shared = { ms: 900, sharing: '3 ranks on h1+h2+h3 (2 cores)' };
    const r = predict({ config: cfg, worldSize: 3, computeMs: 400, computeSource: 'measured', links, shared });
    const alone = predict({ config: cfg, worldSize: 3, computeMs: 400, computeSource: 'measured', links });
    expect(r.stepMs).toBeCloseTo(900 + r.exchangeMs, 0);
    expect(r.scaling).toBeCloseTo(400 / r.stepMs, 3);
    expect(r.scaling).toBeLessThan(alone.scaling);
    expect(r).toMatchObject({ sharedComputeMs: 900, sharing: shared.sharing });
    expect(r.bottleneck).toMatch(/exchange 20\.9 s vs compute 900 ms per step; --fp16 halves it; 3 ranks on h1\+h2\+h3 \(2 cores\) share cores: compute 900 ms with them at once vs 400 ms alone$/);
    // one rank: nothing shares, nothing changes
    expect(predict({ config: cfg, worldSize: 1, computeMs: 400, computeSource: 'm', links: [], shared }).stepMs).toBe(400);
  });
});
