// Preload: exposes exactly the Api (electron/common/api.ts) as `window.cohort`, nothing more.
// Methods go over the one invoke channel; failures reject with plain ApiErrorInfo objects (Error
// subclasses lose their fields crossing contextBridge); onXxx subscriptions return a disposer.
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import { API_EVENTS, API_METHODS, ApiListeners, IPC_CHANNELS, decodeIncoming, type ApiErrorInfo } from '../common';

const CALL_CHANNEL = IPC_CHANNELS.call;

// Subscriptions: each onXxx call asks main for exactly that (one run's events), pushes come back by id.
const listens = new ApiListeners((req) => ipcRenderer.send(IPC_CHANNELS.listen, req));
ipcRenderer.on(IPC_CHANNELS.event, (_e: IpcRendererEvent, msg: unknown) => {
  const m = decodeIncoming(msg);
  if (m.kind === 'push') listens.deliver(m.push.listen, m.push.payload);
  else if (m.kind === 'refused') listens.refused(m.listen);
});

const api: Record<string, unknown> = {};
for (const method of API_METHODS) {
  api[method] = async (...args: unknown[]) => {
    const reply = (await ipcRenderer.invoke(CALL_CHANNEL, { method, args })) as { result?: unknown; error?: ApiErrorInfo };
    if (reply && reply.error) throw { ...(reply.error.name ? { name: reply.error.name } : {}), code: reply.error.code, message: reply.error.message, ...(reply.error.hint ? { hint: reply.error.hint } : {}), ...(reply.error.host ? { host: reply.error.host } : {}), ...(reply.error.runId ? { runId: reply.error.runId } : {}) };
    return reply?.result;
  };
}
for (const event of API_EVENTS) api[event] = listens.members[event];

contextBridge.exposeInMainWorld('cohort', api);
