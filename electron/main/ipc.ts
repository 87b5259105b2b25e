// IPC wiring of the Api: ONE invoke channel (`cohort:call`), ONE subscription channel
// (`cohort:listen`: the window asks for the events it shows, e.g. one run's) and ONE push channel
// (`cohort:event`). Every call and subscription is checked for its sender (the app's main frame,
// nothing else) and its arguments (API_ARGS / API_EVENT_ARGS) before core sees it. This module takes the few Electron
// objects it needs as parameters (structural types), so tests drive it with fakes: the Electron
// binary cannot be installed on the build machines.
import { DisposableStore, toDisposable, type Disposable } from '../../trainer/protocol';
import { IPC_CHANNELS, decodeListenRequest, type CohortApi } from '../common';
import { ListenTable, dispatchCall, type Envelope } from '../core/service/dispatch';

export const CALL_CHANNEL = IPC_CHANNELS.call;
export const EVENT_CHANNEL = IPC_CHANNELS.event;
export const LISTEN_CHANNEL = IPC_CHANNELS.listen;

/** The part of Electron's IpcMainInvokeEvent we read. */
export interface InvokeEventLike {
  senderFrame: { url: string; parent: unknown } | null;
  sender: { id: number };
}
/** The part of Electron's ipcMain we use. */
export interface IpcMainLike {
  handle(channel: string, listener: (event: InvokeEventLike, ...args: unknown[]) => Promise<unknown>): void;
  removeHandler(channel: string): void;
  on(channel: string, listener: (event: InvokeEventLike, ...args: unknown[]) => void): unknown;
  removeListener(channel: string, listener: (event: InvokeEventLike, ...args: unknown[]) => void): unknown;
}
/** The part of Electron's WebContents we push events to. */
export interface WebContentsLike {
  id: number;
  isDestroyed(): boolean;
  send(channel: string, ...args: unknown[]): void;
  /** A main-frame navigation (a reload): the old page's subscriptions go with it. */
  on(event: 'did-navigate', listener: () => void): unknown;
  removeListener(event: 'did-navigate', listener: () => void): unknown;
}

export type IpcWiring = Disposable;

/**
 * Serves `api` to `target` only. `isAppUrl` decides whether a frame URL is the app's own page
 * (file:// of the packaged renderer, or the dev URL).
 */
export function wireIpc(o: { ipcMain: IpcMainLike; target: WebContentsLike; api: CohortApi; isAppUrl: (url: string) => boolean }): IpcWiring {
  const { ipcMain, target, api, isAppUrl } = o;
  const fromApp = (event: InvokeEventLike): boolean => {
    const frame = event.senderFrame;
    return event.sender.id === target.id && !!frame && frame.parent === null && isAppUrl(frame.url);
  };
  ipcMain.handle(CALL_CHANNEL, async (event, msg): Promise<Envelope> => {
    if (!fromApp(event)) {
      return { error: { code: 'forbidden-sender', message: `IPC from ${event.senderFrame?.url ?? 'an unknown frame'} refused: only the Cohort window may call core` } };
    }
    if (typeof msg !== 'object' || msg === null) return { error: { code: 'bad-message', message: 'expected {method, args}' } };
    const { method, args } = msg as { method?: unknown; args?: unknown };
    return dispatchCall(api, method, args ?? []);
  });
  const store = new DisposableStore();
  store.add(toDisposable(() => ipcMain.removeHandler(CALL_CHANNEL)));
  const listens = store.add(
    new ListenTable(api, (m) => {
      if (!target.isDestroyed()) target.send(EVENT_CHANNEL, m);
    }),
  );
  const onListen = (event: InvokeEventLike, msg: unknown) => {
    if (!fromApp(event)) return; // never subscribe another frame to anything
    const req = decodeListenRequest(msg);
    if (req) listens.handle(req);
  };
  ipcMain.on(LISTEN_CHANNEL, onListen);
  store.add(toDisposable(() => ipcMain.removeListener(LISTEN_CHANNEL, onListen)));
  const onNavigate = () => listens.clear();
  target.on('did-navigate', onNavigate);
  store.add(toDisposable(() => target.removeListener('did-navigate', onNavigate)));
  return store;
}
