// The Api over Electron IPC: wraps `window.cohort`, which the preload exposes with exactly the
// Api's methods and onXxx subscriptions. The preload rejects with plain ApiErrorInfo objects
// (Error subclasses lose their fields crossing contextBridge); here they become ApiCallError.
import { API_METHODS, ApiCallError, toApiError, type CohortApi } from '../../../electron/common';

export function ipcBridge(): CohortApi | undefined {
  const w = window as unknown as { cohort?: CohortApi };
  return w.cohort;
}

export function createIpcApi(bridge: CohortApi): CohortApi {
  const methods = Object.fromEntries(
    API_METHODS.map((m) => [
      m,
      async (...args: unknown[]) => {
        try {
          return await (bridge[m] as (...a: unknown[]) => Promise<unknown>)(...args);
        } catch (err) {
          throw new ApiCallError(toApiError(err));
        }
      },
    ]),
  ) as unknown as Omit<CohortApi, 'onRunEvent' | 'onDeployProgress'>;
  return {
    ...methods,
    onRunEvent: (l) => bridge.onRunEvent(l),
    onDeployProgress: (l) => bridge.onDeployProgress(l),
  };
}
