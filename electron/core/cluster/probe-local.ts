// Probe of this machine (the built-in `local` profile): the same shell script as over SSH, run by
// /bin/sh here, so `cohort probe local` and the dashboard describe this machine the same way.
import { execFile } from 'node:child_process';
import { toApiError, type HostProbe } from '../../common';
import { parseProbe, probeScript } from './probe';

export async function probeLocal(host: string, workdir: string, opts: { signal?: AbortSignal; env?: Record<string, string> } = {}): Promise<HostProbe> {
  try {
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile('/bin/sh', ['-c', probeScript(workdir)], { env: { ...process.env, ...opts.env }, timeout: 60_000, maxBuffer: 1 << 20, ...(opts.signal ? { signal: opts.signal } : {}) }, (err, out) =>
        err ? reject(err) : resolve(out),
      );
    });
    return parseProbe(host, stdout);
  } catch (err) {
    return { host, ok: false, probedAt: new Date().toISOString(), gpus: [], tfjsNodeGpu: false, tfjsNode: false, error: toApiError(err) };
  }
}
