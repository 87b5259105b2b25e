import { afterEach, describe, expect, it } from 'vitest';
import { DisposableBase, DisposableStore, Emitter, KeyedEmitter, disposeAll, toDisposable } from './lifecycle';

const realWarn = DisposableStore.warn;
afterEach(() => {
  DisposableStore.warn = realWarn;
});

describe('toDisposable', () => {
  it('runs its function once however often it is disposed', () => {
    let n = 0;
    const d = toDisposable(() => n++);
    expect(d.isDisposed).toBe(false);
    d.dispose();
    d.dispose();
    expect(n).toBe(1);
    expect(d.isDisposed).toBe(true);
  });
});

describe('DisposableStore', () => {
  it('disposes its children last first, once, and is safe to dispose twice', () => {
    const order: string[] = [];
    const s = new DisposableStore();
    s.add(toDisposable(() => order.push('a')));
    s.addFn(() => order.push('b'));
    s.dispose();
    s.dispose();
    expect(order).toEqual(['b', 'a']);
    expect(s.isDisposed).toBe(true);
  });

  it('refuses to hold itself', () => {
    const s = new DisposableStore();
    expect(() => s.add(s)).toThrow(/itself/);
  });

  it('disposes, with a warning, what is added after it was disposed', () => {
    const warnings: string[] = [];
    DisposableStore.warn = (m) => warnings.push(m);
    const s = new DisposableStore();
    s.dispose();
    let n = 0;
    s.addFn(() => n++);
    expect(n).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/added after the store was disposed/);
  });

  it('delete disposes one child, deleteAndLeak only forgets it, clear keeps the store usable', () => {
    const s = new DisposableStore();
    let a = 0;
    let b = 0;
    const da = s.addFn(() => a++);
    const db = s.addFn(() => b++);
    s.delete(da);
    s.deleteAndLeak(db);
    s.dispose();
    expect([a, b]).toEqual([1, 0]);
    const t = new DisposableStore();
    let c = 0;
    t.addFn(() => c++);
    t.clear();
    t.addFn(() => c++);
    t.dispose();
    expect(c).toBe(2);
  });

  it('disposes every child even when one throws, then rethrows', () => {
    const s = new DisposableStore();
    let after = 0;
    s.addFn(() => after++);
    s.addFn(() => {
      throw new Error('boom');
    });
    expect(() => s.dispose()).toThrow('boom');
    expect(after).toBe(1);
    expect(() => disposeAll([toDisposable(() => { throw new Error('x'); }), toDisposable(() => { throw new Error('y'); })])).toThrow(AggregateError);
  });
});

describe('DisposableBase', () => {
  it('disposes what an owner registered, once', () => {
    let n = 0;
    class Owner extends DisposableBase {
      constructor() {
        super();
        this.register(toDisposable(() => n++));
      }
    }
    const o = new Owner();
    o.dispose();
    o.dispose();
    expect(n).toBe(1);
    expect(o.isDisposed).toBe(true);
  });
});

describe('Emitter', () => {
  it('fires to every listener, survives a throwing one, and unsubscribes by the returned disposer', () => {
    const e = new Emitter<number>();
    const got: number[] = [];
    const off = e.event((v) => got.push(v));
    e.event(() => {
      throw new Error('broken subscriber');
    });
    e.fire(1);
    off();
    off();
    e.fire(2);
    expect(got).toEqual([1]);
    expect(e.size).toBe(1);
    e.dispose();
    expect(e.size).toBe(0);
    e.event((v) => got.push(v));
    e.fire(3);
    expect(got).toEqual([1]);
  });
});

describe('KeyedEmitter', () => {
  it('fires a key to that key’s listeners only, and forgets a key with no listeners left', () => {
    const em = new KeyedEmitter<string, number>();
    const a: number[] = [];
    const b: number[] = [];
    const offA = em.event('a', (v) => a.push(v));
    em.event('b', (v) => b.push(v));
    em.fire('a', 1);
    em.fire('b', 2);
    em.fire('c', 3);
    expect(a).toEqual([1]);
    expect(b).toEqual([2]);
    offA();
    offA();
    expect(em.size('a')).toBe(0);
    em.fire('a', 4);
    expect(a).toEqual([1]);
    em.dispose();
    em.fire('b', 5);
    expect(b).toEqual([2]);
    em.event('b', (v) => b.push(v));
    em.fire('b', 6);
    expect(b).toEqual([2]);
  });
});
