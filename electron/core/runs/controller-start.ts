// The controller's `run-start` (split from run-controller.ts, issue 24 item 7), its start-hosts
// effect: on each host the host's LaunchSpec on stdin; the agent's pid, or why the host refused (its
// code and words).
import { runHostCommand } from './host-link';
import { startReply } from './host-replies';
import type { HostLaunch } from './run-plan';

/** undefined: the host's agent runs; otherwise why not (the error's code and message). */
export async function startOnHost(h: HostLaunch): Promise<{ code: string; message: string } | undefined> {
  if (!h.spec) throw new Error(`${h.host}: no launch spec; attach() follows a run started elsewhere`);
  let r;
  try {
    r = await runHostCommand(h.link, ['run-start'], { stdin: JSON.stringify(h.spec) + '\n', timeoutMs: 30_000 });
  } catch (err) {
    r = { code: null, stdout: '', stderr: (err as Error).message, errCode: (err as { code?: string }).code };
  }
  const reply = startReply(r.stdout);
  if (r.code === 0 && reply && !reply.error) return undefined;
  const code = reply?.error?.code ?? ('errCode' in r && typeof r.errCode === 'string' ? r.errCode : 'run-start-failed');
  const message = reply?.error?.message ?? `run-start on ${h.host} failed (exit ${r.code}): ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`;
  return { code, message };
}

/** run-start on every host, leader first. A host that refuses: the ones started are stopped (`stop`), and why it refused. */
export async function startAll(hosts: readonly HostLaunch[], stop: (h: HostLaunch) => Promise<unknown>): Promise<{ host: string; code: string; message: string } | undefined> {
  const started: HostLaunch[] = [];
  for (const h of hosts) {
    const refused = await startOnHost(h);
    if (refused) {
      await Promise.all(started.map(stop));
      return { host: h.host, ...refused };
    }
    started.push(h);
  }
  return undefined;
}
