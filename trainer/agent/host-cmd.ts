// Shared bits of the host commands (run-start, run-follow, run-stop, run-status): flags, the one
// JSON reply line, and the workdir.
import { createInterface } from 'node:readline';
import { writeStdoutLine } from '../train/emit';
import { CohortError, HOST_CMD_EXIT, toErrorInfo } from '../protocol';

export class HostCmdFailure extends CohortError {
  constructor(
    code: string,
    message: string,
    readonly exitCode: number = HOST_CMD_EXIT.failed,
  ) {
    super(code, message);
    this.name = 'HostCmdFailure';
  }
}

/** `--name value` flags; unknown flags are a usage error naming them. */
export function parseFlags(argv: readonly string[], known: readonly string[], cmd: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const name = a.replace(/^--/, '');
    if (!a.startsWith('--') || !known.includes(name)) throw new HostCmdFailure('usage', `${cmd}: unknown argument ${JSON.stringify(a)} (known: ${known.map((k) => '--' + k).join(', ')})`, HOST_CMD_EXIT.usage);
    const v = argv[++i];
    if (v === undefined) throw new HostCmdFailure('usage', `${cmd}: --${name} needs a value`, HOST_CMD_EXIT.usage);
    out[name] = v;
  }
  return out;
}

export function intFlag(flags: Record<string, string>, name: string, dflt: number, cmd: string): number {
  const v = flags[name];
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v)) throw new HostCmdFailure('usage', `${cmd}: --${name} must be a whole number, got ${JSON.stringify(v)}`, HOST_CMD_EXIT.usage);
  return Number(v);
}

/** Writes one JSON line to stdout, synchronously (the process may exit right after). */
export function replyLine(value: unknown): void {
  writeStdoutLine(JSON.stringify(value));
}

/** Runs a host command: a HostCmdFailure becomes the `{"error":..}` line and its exit code. */
export async function hostCommand(fn: () => Promise<number>): Promise<number> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof HostCmdFailure) {
      replyLine({ error: { code: err.code, message: err.message } });
      return err.exitCode;
    }
    // any other CohortError (a bad run id from the one run-id rule, a damaged record) keeps its code
    // and hint on the wire; only what has no code of its own is 'internal'
    replyLine({ error: err instanceof CohortError ? toErrorInfo(err) : { code: 'internal', message: (err as Error).message } });
    return HOST_CMD_EXIT.failed;
  }
}

export const sleep = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));

/** A host command's request: the first line on stdin (then stdin is let go, so the process can exit). */
export async function firstStdinLine(): Promise<string | undefined> {
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const l of rl) {
    rl.close();
    process.stdin.pause();
    return l;
  }
  return undefined;
}
