// What the host commands print, read by the client (split from run-controller.ts): their one JSON
// reply line, a failure's HostCmdError line ({"error": ErrorInfo}), and Slurm's final job states.
import type { ErrorInfo, HostCmdError, RunStartReply } from '../../../trainer/protocol';

/** Slurm's JobStates of a job that has left the queue for good. */
export function slurmJobOver(state: string): boolean {
  return /^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)$/.test(state);
}

/** A host command's failure line (HostCmdError: `{"error":{code,message}}`, the one shape a host
 *  command's failure has on the wire), if `text` is one. */
export function hostCmdError(text: string): ErrorInfo | undefined {
  try {
    const e = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    return e && typeof e.code === 'string' && typeof e.message === 'string' ? { code: e.code, message: e.message } : undefined;
  } catch {
    return undefined;
  }
}

/** The reply of `run-start` / `run-rejoin`: the started agent, or the host's refusal. */
export type StartReply = Partial<RunStartReply> & Partial<HostCmdError>;
export const startReply = (stdout: string): StartReply | undefined => parseLine(stdout) as StartReply | undefined;

export function parseLine(stdout: string): Record<string, unknown> | undefined {
  const line = stdout.trim().split('\n').pop();
  if (!line) return undefined;
  try {
    const v = JSON.parse(line) as unknown;
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
