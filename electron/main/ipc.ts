// IPC wiring of the Api: ONE invoke channel (`cohort:call`) and ONE push channel (`cohort:event`).
// Every call is checked for its sender (the app's main frame, nothing else) and its arguments
// (dispatchCall validates with API_ARGS) before core sees it. This module takes the few Electron
// objects it needs as parameters (structural types), so tests drive it with fakes: the Electron
// binary cannot be installed on the build machines.
import type { CohortApi } from '../common';
import { dispatchCall, type Envelope } from '../core/service/dispatch';

export const CALL_CHANNEL = 'cohort:call';
export const EVENT_CHANNEL = 'cohort:event';

/** The part of Electron's IpcMainInvokeEvent we read. */
export interface InvokeEventLike {
  senderFrame: { url: string; parent: unknown } | null;
  sender: { id: number };
}
/** The part of Electron's ipcMain we use. */
export interface IpcMainLike {
  handle(channel: string, listener: (event: InvokeEventLike, ...args: unknown[]) => Promise<unknown>): void;
  removeHandler(channel: string): void;
}
/** The part of Electron's WebContents we push events to. */
export interface WebContentsLike {
  id: number;
  isDestroyed(): boolean;
  send(channel: string, ...args: unknown[]): void;
}

export interface IpcWiring {
  dispose(): void;
}

/**
 * Serves `api` to `target` only. `isAppUrl` decides whether a frame URL is the app's own page
 * (file:// of the packaged renderer, or the dev URL).
 */
export function wireIpc(o: { ipcMain: IpcMainLike; target: WebContentsLike; api: CohortApi; isAppUrl: (url: string) => boolean }): IpcWiring {
  const { ipcMain, target, api, isAppUrl } = o;
  ipcMain.handle(CALL_CHANNEL, async (event, msg): Promise<Envelope> => {
    const frame = event.senderFrame;
    if (event.sender.id !== target.id || !frame || frame.parent !== null || !isAppUrl(frame.url)) {
      return { error: { code: 'forbidden-sender', message: `IPC from ${frame?.url ?? 'an unknown frame'} refused: only the Cohort window may call core` } };
    }
    if (typeof msg !== 'object' || msg === null) return { error: { code: 'bad-message', message: 'expected {method, args}' } };
    const { method, args } = msg as { method?: unknown; args?: unknown };
    return dispatchCall(api, method, args ?? []);
  });
  const push = (event: string, payload: unknown) => {
    if (!target.isDestroyed()) target.send(EVENT_CHANNEL, { event, payload });
  };
  const subs = [api.onRunEvent((m) => push('onRunEvent', m)), api.onDeployProgress((p) => push('onDeployProgress', p))];
  let disposed = false;
  return {
    dispose() {
      if (disposed) return;
      disposed = true;
      ipcMain.removeHandler(CALL_CHANNEL);
      for (const off of subs) off();
    },
  };
}
