// The few WebAssembly binary-format pieces our hand-assembled SIMD modules need (the collectives'
// reduce kernels, the optimizers). Hand-assembled because each module is a few hundred bytes and a
// wasm toolchain would be a large dependency; every module built from these is checked against
// scalar code in its tests. Opcodes: https://webassembly.github.io/spec/core/binary/instructions.html

export function leb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}

export const section = (id: number, bytes: number[]): number[] => [id, ...leb(bytes.length), ...bytes];
export const vec = (items: number[][]): number[] => [...leb(items.length), ...items.flat()];
export const name = (s: string): number[] => [...leb(s.length), ...Array.from(s, (c) => c.charCodeAt(0))];

export const I32 = 0x7f;
export const F32 = 0x7d;
export const V128 = 0x7b;

export const get = (i: number): number[] => [0x20, i];
export const globalGet = (i: number): number[] => [0x23, ...leb(i)];
export const set = (i: number): number[] => [0x21, i];
export const simd = (op: number): number[] => [0xfd, ...leb(op)];
/** v128.const with these 16 bytes (little-endian lanes, as wasm and x86/arm64 JS typed arrays agree). */
const v128Const = (lanes: Int32Array | Float32Array): number[] => [0xfd, 0x0c, ...new Uint8Array(lanes.buffer)];
/** f32x4 lane-wise arithmetic and comparison (`gt` gives all-ones lanes where a > b). */
export const f32x4 = {
  splat: simd(0x13), gt: simd(0x44), neg: simd(0xe1), sqrt: simd(0xe3), add: simd(0xe4), sub: simd(0xe5), mul: simd(0xe6), div: simd(0xe7),
  /** pmax(a, b) = a < b ? b : a (NaN in b gives a: max(0, NaN) is 0, like the JS ReLU `v > 0 ? v : 0`). */
  pmax: simd(0xeb),
  /** v128.const with `value` in all four f32 lanes. */
  const: (value: number): number[] => v128Const(Float32Array.of(value, value, value, value)),
};
/** i32x4 lane-wise integer operations. */
export const i32x4 = {
  splat: simd(0x11), add: simd(0xae), sub: simd(0xb1),
  /** v128.const of four i32 lanes (u32 values keep their bits). */
  const: (a: number, b: number, c: number, d: number): number[] => v128Const(Int32Array.of(a, b, c, d)),
};
/** Whole-register v128 operations; load/store take the address from the stack (align 2^4). */
export const v128 = {
  load: (off = 0): number[] => [0xfd, 0x00, 4, ...leb(off)],
  store: (off = 0): number[] => [0xfd, 0x0b, 4, ...leb(off)],
  and: simd(0x4e), or: simd(0x50), xor: simd(0x51),
  /** bitselect(a, b, mask): a where mask bits are 1, else b. */
  bitselect: simd(0x52),
  /** v128.const 0. */
  zero: [0xfd, 0x0c, ...new Array<number>(16).fill(0)],
};

/**
 * A module's v128 constants as mutable globals. V8 rebuilds an inline v128.const at every use
 * inside a loop (mov imm64, movq, punpcklqdq: three instructions each; read with
 * --print-wasm-code), and does the same for a local that only ever holds a constant. A mutable
 * global is opaque to it: a function reads the globals it uses into locals once, before its
 * loops (FunctionConstants.prologue), and the loops keep them in registers or reload each with
 * one instruction. Pass `inits` to moduleBytes.
 */
export class V128Globals {
  readonly inits: number[][] = [];
  index(code: number[]): number {
    const i = this.inits.findIndex((b) => b.length === code.length && b.every((x, j) => x === code[j]));
    return i >= 0 ? i : this.inits.push(code) - 1;
  }
}

/** One function's constants: v128 locals from `firstLocal` on, set from the module's globals by `prologue()`. */
export class FunctionConstants {
  private readonly used: number[] = [];
  constructor(
    private readonly globals: V128Globals,
    private readonly firstLocal: number,
  ) {}
  /** local.get of a constant with the same u32 in all four lanes. */
  u32(value: number): number[] {
    return this.local(i32x4.const(value, value, value, value));
  }
  /** local.get of a constant with `value` in all four f32 lanes. */
  f32(value: number): number[] {
    return this.local(f32x4.const(value));
  }
  private local(code: number[]): number[] {
    const g = this.globals.index(code);
    let i = this.used.indexOf(g);
    if (i < 0) i = this.used.push(g) - 1;
    return get(this.firstLocal + i);
  }
  /** How many v128 locals the constants take. */
  get count(): number {
    return this.used.length;
  }
  /** Sets the constants' locals; put it at the start of the function. */
  prologue(): number[] {
    return this.used.flatMap((g, i) => [...globalGet(g), ...set(this.firstLocal + i)]);
  }
}

/** v128.load at local `ptr` + off. */
export const load = (ptr: number, off = 0): number[] => [...get(ptr), ...v128.load(off)];
/** Store the v128 computed by `value` at local `ptr` + off. */
export const store = (ptr: number, off: number, value: number[]): number[] => [...get(ptr), ...value, ...v128.store(off)];
/** ptr += n (i32 local). */
export const advance = (ptr: number, n: number): number[] => [...get(ptr), 0x41, ...leb(n), 0x6a, ...set(ptr)];

/** `block { loop { br_if (ptr >= end) out; body; continue } }` (unsigned compare). */
export function whileBelow(ptr: number, end: number, body: number[]): number[] {
  return [0x02, 0x40, 0x03, 0x40, ...get(ptr), ...get(end), 0x4f, 0x0d, 1, ...body, 0x0c, 0, 0x0b, 0x0b];
}

export interface WasmFunction {
  name: string;
  params: number[];
  /** Extra locals as [count, type] runs. */
  locals: [number, number][];
  code: number[];
}

/**
 * A module of exported functions (no results) over one imported memory env.mem: `pages` × 64 KiB
 * fixed, or `{ growable: true }` to run on a memory someone else owns and grows (tfjs's wasm heap);
 * `v128Globals` are the init expressions (v128.const …) of mutable v128 globals 0, 1, ….
 */
export function moduleBytes(memory: number | { growable: true }, fns: WasmFunction[], v128Globals: number[][] = []): Uint8Array {
  const types = fns.map((f) => [0x60, ...leb(f.params.length), ...f.params, 0]);
  const bodies = fns.map((f) => {
    const body = [...vec(f.locals.map(([n, t]) => [...leb(n), t])), ...f.code, 0x0b];
    return [...leb(body.length), ...body];
  });
  const limits = typeof memory === 'number' ? [0x01, ...leb(memory), ...leb(memory)] : [0x00, 0x01];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, vec(types)),
    ...section(2, vec([[...name('env'), ...name('mem'), 0x02, ...limits]])),
    ...section(3, vec(fns.map((_, i) => leb(i)))),
    // Mutable v128 globals, each initialised by a v128.const (V128Globals says why mutable).
    ...(v128Globals.length ? section(6, vec(v128Globals.map((init) => [V128, 0x01, ...init, 0x0b]))) : []),
    ...section(7, vec(fns.map((f, i) => [...name(f.name), 0, ...leb(i)]))),
    ...section(10, vec(bodies)),
  ]);
}

/** What of the WebAssembly JS API the trainer uses (its tsconfig has no DOM lib, and @types/node does not declare it). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
interface WasmApi {
  Memory: new (d: { initial: number; maximum?: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (m: object, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> };
  validate(bytes: Uint8Array): boolean;
}
/** The runtime's WebAssembly global, typed with just those members. */
export const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** Compile and instantiate `bytes` (small modules: synchronously) on `mem` as env.mem. */
export function instantiate<T>(bytes: Uint8Array, mem: WasmMemory): T {
  return new wasmApi.Instance(new wasmApi.Module(bytes), { env: { mem } }).exports as T;
}

/**
 * `(heap) => kernels`: the functions `build()` returns, assembled once (on first use) and
 * instantiated once per memory they run on (e.g. tfjs's wasm heap, shared by every tensor).
 */
export function kernelsPerMemory<T>(build: () => WasmFunction[]): (mem: WasmMemory) => T {
  const bound = new WeakMap<WasmMemory, T>();
  let bytes: Uint8Array | null = null;
  return (mem) => {
    let k = bound.get(mem);
    if (!k) {
      bytes ??= moduleBytes({ growable: true }, build());
      k = instantiate<T>(bytes, mem);
      bound.set(mem, k);
    }
    return k;
  };
}
