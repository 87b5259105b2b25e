// The assembler's concatenation (concat, and block/loop/ifElse/forRange/vec/moduleBytes built on it)
// against the plain spread/flat() forms it replaced for speed: the same bytes, part for part. The
// kernels built from it are checked against scalar code in their own tests (conv-wasm, gemm-kernels,
// reduce-kernel, optimizer).
import { describe, expect, it } from 'vitest';
import { concat, ctl, forRange, get, I32, i32, inc, leb, moduleBytes, set, vec, wasmApi, type Code } from './wasm-asm';

/** Deterministic parts of mixed sizes, empty ones included. */
function parts(seed: number, count: number): number[][] {
  let x = seed;
  const next = () => (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
  return Array.from({ length: count }, (_, i) => Array.from({ length: i % 5 === 0 ? 0 : next() * (i % 7 === 0 ? 20 : 1) }, next));
}

describe('wasm-asm concatenation', () => {
  it('concat is parts.flat(), for empty, small and large parts', () => {
    for (const seed of [1, 2, 3]) {
      const p = parts(seed, 30);
      expect(p.some((q) => q.length === 0) && p.some((q) => q.length > 1000)).toBe(true);
      expect(concat(p)).toEqual(p.flat());
    }
    expect(concat([])).toEqual([]);
  });

  it('block, loop, ifElse, forRange and vec give the spread forms’ bytes', () => {
    const [a, b, c] = parts(7, 3).map((p, i) => [...p, i]) as [Code, Code, Code];
    expect(ctl.block(a, b, c)).toEqual([0x02, 0x40, ...a, ...b, ...c, 0x0b]);
    expect(ctl.loop(a, b)).toEqual([0x03, 0x40, ...a, ...b, 0x0b]);
    expect(ctl.ifElse(a, b)).toEqual([0x04, 0x40, ...a, 0x05, ...b, 0x0b]);
    expect(ctl.ifElse(a, [])).toEqual([0x04, 0x40, ...a, 0x0b]);
    const end = get(1);
    expect(forRange(2, end, a, b)).toEqual([
      ...i32.const(0), ...set(2),
      0x02, 0x40, 0x03, 0x40, ...get(2), ...end, ...i32.geU, ...ctl.brIf(1), ...a, ...b, ...inc(2, 1), ...ctl.br(0), 0x0b, 0x0b,
    ]);
    expect(vec([a, b, c])).toEqual([...leb(3), ...a, ...b, ...c]);
  });

  it('moduleBytes builds a module that validates, with each function body where the spread form put it', () => {
    const body = forRange(1, get(0), [0x01]); // nop in a loop
    const bytes = moduleBytes({ growable: true }, [{ name: 'f', params: [I32], locals: [[1, I32]], code: body }]);
    expect(wasmApi.validate(bytes)).toBe(true);
    const fnBody = [...vec([[...leb(1), I32]]), ...body, 0x0b];
    const codeSection = [10, ...leb([...leb(1), ...leb(fnBody.length), ...fnBody].length), ...leb(1), ...leb(fnBody.length), ...fnBody];
    expect(Array.from(bytes.slice(bytes.length - codeSection.length))).toEqual(codeSection);
  });
});
