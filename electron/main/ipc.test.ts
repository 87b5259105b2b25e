// The IPC wiring against the real core (CohortService over temp directories). The Electron
// binary cannot be installed on the build machines (its postinstall downloads it), so Electron
// is replaced at the thinnest boundary: a fake `ipcMain` (handle/removeHandler/on/removeListener)
// and a fake `webContents` (id/send/isDestroyed/on) — the exact surface wireIpc uses.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolvePaths } from '../core/paths';
import { CohortService } from '../core/service/cohort-service';
import { CALL_CHANNEL, EVENT_CHANNEL, LISTEN_CHANNEL, wireIpc, type InvokeEventLike, type IpcMainLike, type IpcWiring } from './ipc';
import { isAppUrl } from './security';

const APP = 'file:///opt/cohort/resources/app/dist/renderer/index.html';

class FakeIpcMain implements IpcMainLike {
  handlers = new Map<string, (event: InvokeEventLike, ...args: unknown[]) => Promise<unknown>>();
  handle(channel: string, listener: (event: InvokeEventLike, ...args: unknown[]) => Promise<unknown>): void {
    if (this.handlers.has(channel)) throw new Error(`second handler for ${channel}`); // as Electron does
    this.handlers.set(channel, listener);
  }
  removeHandler(channel: string): void {
    this.handlers.delete(channel);
  }
  listeners = new Map<string, Set<(event: InvokeEventLike, ...args: unknown[]) => void>>();
  on(channel: string, listener: (event: InvokeEventLike, ...args: unknown[]) => void): void {
    if (!this.listeners.has(channel)) this.listeners.set(channel, new Set());
    this.listeners.get(channel)!.add(listener);
  }
  removeListener(channel: string, listener: (event: InvokeEventLike, ...args: unknown[]) => void): void {
    this.listeners.get(channel)?.delete(listener);
  }
  send(event: InvokeEventLike, channel: string, ...args: unknown[]): void {
    for (const l of this.listeners.get(channel) ?? []) l(event, ...args);
  }
  invoke(event: InvokeEventLike, ...args: unknown[]): Promise<unknown> {
    const h = this.handlers.get(CALL_CHANNEL);
    if (!h) throw new Error('no handler');
    return h(event, ...args);
  }
}

describe('Electron IPC wiring over the real core', () => {
  let dir: string;
  let service: CohortService;
  let ipc: FakeIpcMain;
  let wiring: IpcWiring;
  const sent: unknown[][] = [];
  const navigate = new Set<() => void>();
  const target = {
    id: 7,
    isDestroyed: () => false,
    send: (...a: unknown[]) => void sent.push(a),
    on: (_e: 'did-navigate', l: () => void) => navigate.add(l),
    removeListener: (_e: 'did-navigate', l: () => void) => navigate.delete(l),
  };
  const fromApp: InvokeEventLike = { sender: { id: 7 }, senderFrame: { url: APP, parent: null } };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cohort-ipc-'));
    service = new CohortService({ paths: resolvePaths({ COHORT_CONFIG_DIR: join(dir, 'c'), COHORT_DATA_DIR: join(dir, 'd'), HOME: dir }) });
    ipc = new FakeIpcMain();
    wiring = wireIpc({ ipcMain: ipc, target, api: service, isAppUrl: (u) => isAppUrl(u, APP) });
  });
  afterEach(async () => {
    wiring.dispose();
    service.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the Api: profiles round-trip through core', async () => {
    const list = (await ipc.invoke(fromApp, { method: 'listProfiles', args: [] })) as { result: { name: string }[] };
    expect(list.result.map((p) => p.name)).toEqual(['local']);
    const saved = (await ipc.invoke(fromApp, { method: 'saveProfile', args: [{ name: 'lab', hosts: [{ name: 'h1', address: '10.0.0.1', slots: 2 }] }] })) as { result: { name: string; hosts: { port: number }[] } };
    expect(saved.result.name).toBe('lab');
    expect(saved.result.hosts[0]!.port).toBe(22);
    const renamed = (await ipc.invoke(fromApp, { method: 'saveProfile', args: [{ ...saved.result, name: 'lab2' }, 'lab'] })) as { result: { name: string } };
    expect(renamed.result.name).toBe('lab2');
    const after = (await ipc.invoke(fromApp, { method: 'listProfiles', args: [] })) as { result: { name: string }[] };
    expect(after.result.map((p) => p.name)).toEqual(['local', 'lab2']);
  });

  it('validates arguments before core sees them', async () => {
    expect(await ipc.invoke(fromApp, { method: 'deleteProfile', args: [42] })).toMatchObject({ error: { code: 'bad-argument' } });
    expect(await ipc.invoke(fromApp, { method: 'startRun', args: ['local'] })).toMatchObject({ error: { code: 'bad-argument' } });
    expect(await ipc.invoke(fromApp, { method: 'saveProfile', args: [{ name: 'x', hosts: [{ name: 'h', address: 'a', port: 70000 }] }] })).toMatchObject({ error: { code: 'profile-invalid' } });
    expect(await ipc.invoke(fromApp, { method: 'startRun', args: [{ profile: 'local', config: { imageSize: 4 } }] })).toMatchObject({ error: { code: 'bad-config', message: expect.stringContaining('--image-size') } });
  });

  it('refuses unknown methods and malformed messages without crashing', async () => {
    expect(await ipc.invoke(fromApp, { method: 'rmRf', args: [] })).toMatchObject({ error: { code: 'unknown-method' } });
    expect(await ipc.invoke(fromApp, 'listProfiles')).toMatchObject({ error: { code: 'bad-message' } });
    expect(await ipc.invoke(fromApp, { method: 'listRuns', args: 'nope' })).toMatchObject({ error: { code: 'bad-argument' } });
    expect(await ipc.invoke(fromApp, { method: 'listRuns', args: [] })).toEqual({ result: [] });
  });

  it('refuses other senders: another webContents, a subframe, a foreign URL', async () => {
    const call = { method: 'listProfiles', args: [] };
    expect(await ipc.invoke({ sender: { id: 8 }, senderFrame: { url: APP, parent: null } }, call)).toMatchObject({ error: { code: 'forbidden-sender' } });
    expect(await ipc.invoke({ sender: { id: 7 }, senderFrame: { url: APP, parent: {} } }, call)).toMatchObject({ error: { code: 'forbidden-sender' } });
    expect(await ipc.invoke({ sender: { id: 7 }, senderFrame: { url: 'https://evil.example/', parent: null } }, call)).toMatchObject({ error: { code: 'forbidden-sender' } });
    expect(await ipc.invoke({ sender: { id: 7 }, senderFrame: null }, call)).toMatchObject({ error: { code: 'forbidden-sender' } });
  });

  it('cluster actions say plainly that SSH is not connected', async () => {
    await ipc.invoke(fromApp, { method: 'saveProfile', args: [{ name: 'lab', hosts: [{ name: 'h1', address: '10.0.0.1' }] }] });
    expect(await ipc.invoke(fromApp, { method: 'probe', args: ['lab'] })).toMatchObject({ error: { code: 'cluster-unavailable' } });
    expect(await ipc.invoke(fromApp, { method: 'stopRun', args: ['nope'] })).toMatchObject({ error: { code: 'run-not-found' } });
  });

  it('subscribes only the app frame, to the run it asks for, and pushes that run on the event channel', async () => {
    const r = (await ipc.invoke(fromApp, { method: 'startRun', args: [{ profile: 'local', ranks: 1, config: { stem: 'cifar', imageSize: 8, batchSize: 2, classes: 10, steps: 50, warmupSteps: 0 } }] })) as { result: { runId: string } };
    expect(r.result.runId).toMatch(/^\d{8}-\d{6}-/);
    // Another frame asking is ignored; a bad argument is refused by id; another run's id gets nothing.
    ipc.send({ sender: { id: 7 }, senderFrame: { url: 'https://evil.example/', parent: null } }, LISTEN_CHANNEL, { listen: 1, event: 'onRunEvent', args: [r.result.runId] });
    ipc.send(fromApp, LISTEN_CHANNEL, { listen: 2, event: 'onRunEvent', args: [42] });
    ipc.send(fromApp, LISTEN_CHANNEL, { listen: 3, event: 'onRunEvent', args: ['some-other-run'] });
    expect(sent).toEqual([[EVENT_CHANNEL, { listen: 2, error: expect.objectContaining({ code: 'bad-argument' }) }]]);
    sent.length = 0;
    ipc.send(fromApp, LISTEN_CHANNEL, { listen: 4, event: 'onRunEvent', args: [r.result.runId] });
    await expect.poll(() => sent.length, { timeout: 60_000 }).toBeGreaterThan(0);
    expect(sent[0]![0]).toBe(EVENT_CHANNEL);
    expect(sent[0]![1]).toMatchObject({ listen: 4, payload: { runId: r.result.runId } });
    expect(sent.every((m) => (m[1] as { listen: number }).listen === 4)).toBe(true);
    // A reload drops the old page's subscriptions.
    for (const l of navigate) l();
    const before = sent.length;
    expect(await ipc.invoke(fromApp, { method: 'stopRun', args: [r.result.runId] })).toEqual({ result: null });
    expect(sent.length).toBe(before);
    const meta = service.runs.meta(r.result.runId);
    expect(meta?.status).toBe('cancelled');
    wiring.dispose();
    wiring.dispose(); // idempotent
    expect(ipc.handlers.size).toBe(0);
    expect(ipc.listeners.get(LISTEN_CHANNEL)?.size).toBe(0);
    expect(navigate.size).toBe(0);
  });
});
