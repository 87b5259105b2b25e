// One lifetime idiom for every owner of a socket, process, timer or listener (VS Code's
// base/common/lifecycle.ts shape, written for this project). Plain TypeScript: the trainer, core,
// main, preload and the renderer all use it.
//   - `Disposable` is anything with `dispose()`; disposing twice does nothing the second time.
//   - `toDisposable(fn)` wraps a cleanup function so it runs at most once.
//   - `DisposableStore` collects children and disposes them together (last added first); it is safe
//     to dispose twice, refuses to hold itself, and disposes (with a warning) anything added after
//     it was disposed, so a late listener or timer cannot leak.
//   - `DisposableBase` is the base class an owner extends: `this.register(child)`, `isDisposed`.
// Every `onXxx(listener)` in Cohort returns a `Disposable`-compatible disposer (`() => void`).

export interface Disposable {
  dispose(): void;
}

/** A subscription's disposer: call it (or wrap it with toDisposable) to unsubscribe. */
export type Unsubscribe = () => void;

export function isDisposable(x: unknown): x is Disposable {
  return typeof x === 'object' && x !== null && typeof (x as { dispose?: unknown }).dispose === 'function';
}

/** Runs `fn` on the first dispose() only. */
export function toDisposable(fn: () => void): Disposable & { readonly isDisposed: boolean } {
  let done = false;
  return {
    get isDisposed() {
      return done;
    },
    dispose() {
      if (done) return;
      done = true;
      fn();
    },
  };
}

/** Disposes every item (last first); if some throw, the others still run and the first error is rethrown after. */
export function disposeAll(items: Iterable<Disposable>): void {
  const errors: unknown[] = [];
  for (const d of [...items].reverse()) {
    try {
      d.dispose();
    } catch (e) {
      errors.push(e);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, `${errors.length} errors while disposing`);
}

type Warn = (message: string) => void;
const defaultWarn: Warn = (m) => (globalThis as { console?: { warn(m: string): void } }).console?.warn(m);

export class DisposableStore implements Disposable {
  /** Where add-after-dispose warnings go (tests swap it; the default is console.warn). */
  static warn: Warn = defaultWarn;

  private readonly items = new Set<Disposable>();
  private disposed = false;

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Adds a child and returns it. After dispose() the child is disposed at once (and a warning logged). */
  add<T extends Disposable>(item: T): T {
    if ((item as unknown) === this) throw new Error('DisposableStore: cannot add a store to itself');
    if (this.disposed) {
      DisposableStore.warn(`DisposableStore: an item was added after the store was disposed; it is disposed now (a leak otherwise)\n${new Error().stack ?? ''}`);
      item.dispose();
      return item;
    }
    this.items.add(item);
    return item;
  }

  /** Adds a cleanup function; shorthand for add(toDisposable(fn)). */
  addFn(fn: () => void): Disposable {
    return this.add(toDisposable(fn));
  }

  /** Disposes and forgets one child. */
  delete(item: Disposable): void {
    if (this.items.delete(item)) item.dispose();
  }

  /** Forgets a child without disposing it (ownership moves elsewhere). */
  deleteAndLeak(item: Disposable): void {
    this.items.delete(item);
  }

  /** Disposes every child now; the store stays usable. */
  clear(): void {
    const items = [...this.items];
    this.items.clear();
    disposeAll(items);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.clear();
  }
}

/** Base class for owners: children registered with `register` go when the owner does. */
export abstract class DisposableBase implements Disposable {
  protected readonly store = new DisposableStore();

  get isDisposed(): boolean {
    return this.store.isDisposed;
  }

  protected register<T extends Disposable>(item: T): T {
    return this.store.add(item);
  }

  dispose(): void {
    this.store.dispose();
  }
}

/**
 * One event source (VS Code's Emitter): `event(listener)` subscribes and returns the disposer;
 * `fire(value)` calls every listener, and one listener throwing (a closed socket) neither stops
 * the others nor reaches the caller. dispose() drops every listener; later subscriptions are inert.
 */
export class Emitter<T> implements Disposable {
  private readonly listeners = new Set<(value: T) => void>();
  private disposed = false;

  /** Subscribes; the returned function unsubscribes (idempotent). */
  readonly event = (listener: (value: T) => void): Unsubscribe => {
    if (this.disposed) return () => undefined;
    // Wrapped so the same function subscribed twice is two subscriptions, each removed by its own disposer.
    const entry = (v: T) => listener(v);
    this.listeners.add(entry);
    return () => void this.listeners.delete(entry);
  };

  get size(): number {
    return this.listeners.size;
  }

  fire(value: T): void {
    for (const l of [...this.listeners]) {
      try {
        l(value);
      } catch {
        // One broken subscriber must not stop the others or the producer.
      }
    }
  }

  dispose(): void {
    this.disposed = true;
    this.listeners.clear();
  }
}

/**
 * Emitters by key (a run id): `event(key, listener)` hears only `fire(key, …)`, so a client that
 * follows one run is never handed another run's events to filter. A key's Emitter is dropped when
 * its last listener unsubscribes.
 */
export class KeyedEmitter<K, T> implements Disposable {
  private readonly emitters = new Map<K, Emitter<T>>();
  private disposed = false;

  /** Subscribes to `key`; the returned function unsubscribes (idempotent). */
  event(key: K, listener: (value: T) => void): Unsubscribe {
    if (this.disposed) return () => undefined;
    let em = this.emitters.get(key);
    if (!em) this.emitters.set(key, (em = new Emitter<T>()));
    const off = em.event(listener);
    const owner = em;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      off();
      if (owner.size === 0 && this.emitters.get(key) === owner) this.emitters.delete(key);
    };
  }

  /** Listeners of `key` (0 when none). */
  size(key: K): number {
    return this.emitters.get(key)?.size ?? 0;
  }

  fire(key: K, value: T): void {
    this.emitters.get(key)?.fire(value);
  }

  dispose(): void {
    this.disposed = true;
    for (const em of this.emitters.values()) em.dispose();
    this.emitters.clear();
  }
}
