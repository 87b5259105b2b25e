// Preload: exposes exactly the Api (electron/common/api.ts) as `window.cohort`, nothing more.
// Methods go over the one invoke channel; failures reject with plain ApiErrorInfo objects (Error
// subclasses lose their fields crossing contextBridge); onXxx subscriptions return a disposer.
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import { API_EVENTS, API_METHODS, type ApiErrorInfo } from '../common';

const CALL_CHANNEL = 'cohort:call';
const EVENT_CHANNEL = 'cohort:event';

type Listener = (payload: unknown) => void;
const listeners: Record<string, Set<Listener>> = Object.fromEntries(API_EVENTS.map((e) => [e, new Set<Listener>()]));

ipcRenderer.on(EVENT_CHANNEL, (_e: IpcRendererEvent, msg: unknown) => {
  if (typeof msg !== 'object' || msg === null) return;
  const { event, payload } = msg as { event?: unknown; payload?: unknown };
  if (typeof event !== 'string' || !listeners[event]) return;
  for (const l of listeners[event]!) l(payload);
});

const api: Record<string, unknown> = {};
for (const method of API_METHODS) {
  api[method] = async (...args: unknown[]) => {
    const reply = (await ipcRenderer.invoke(CALL_CHANNEL, { method, args })) as { result?: unknown; error?: ApiErrorInfo };
    if (reply && reply.error) throw { code: reply.error.code, message: reply.error.message, ...(reply.error.hint ? { hint: reply.error.hint } : {}) };
    return reply?.result;
  };
}
for (const event of API_EVENTS) {
  api[event] = (listener: Listener) => {
    if (typeof listener !== 'function') throw new TypeError(`${event} needs a function`);
    listeners[event]!.add(listener);
    return () => listeners[event]!.delete(listener);
  };
}

contextBridge.exposeInMainWorld('cohort', api);
