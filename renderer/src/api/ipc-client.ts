// The Api over Electron IPC: wraps `window.cohort`, which the preload exposes with exactly the
// Api's methods and onXxx subscriptions. The preload rejects with plain ApiErrorInfo objects
// (Error subclasses lose their fields crossing contextBridge); here they become ApiCallError.
import { API_EVENTS, API_METHODS, ApiCallError, toApiError, type ApiEvent, type CohortApi } from '../../../electron/common';

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
  ) as unknown as Omit<CohortApi, ApiEvent>;
  // The preload's onXxx members already return disposers; pass them through, one per API_EVENTS entry.
  const events = Object.fromEntries(API_EVENTS.map((e) => [e, (...a: unknown[]) => (bridge[e] as (...a: unknown[]) => () => void)(...a)])) as unknown as Pick<CohortApi, ApiEvent>;
  return { ...methods, ...events };
}
