// Deploy: put the trainer bundle on a host at <workdir>/trainer/<content-hash>/, once. The hash
// (resources/trainer/manifest.json) names the directory, so a second deploy of the same bundle
// finds `.complete` there and transfers nothing. Files go to a temporary sibling first, their
// sha256 is checked on the host, then one `mv` publishes the directory: a half upload is never
// mistaken for a deployed bundle.
import { join, posix } from 'node:path';
import type { DeployProgress, DeployResult } from '../../common';
import type { TrainerBundle } from '../trainer-bundle';
import { shellQuote } from './probe';

/** The part of an SSH session deploy needs (core/ssh's HostSession provides it). */
export interface DeployTarget {
  readonly name: string;
  exec(command: string, opts?: { signal?: AbortSignal }): Promise<{ code: number | null; stdout: string; stderr: string }>;
  upload(localPath: string, remotePath: string, opts?: { onProgress?: (bytes: number) => void; signal?: AbortSignal }): Promise<void>;
}

export function remoteBundleDir(workdir: string, hash: string): string {
  return posix.join(workdir, 'trainer', hash.slice(0, 16));
}

/** Resolves `~/x` and relative workdirs against the remote home (SFTP does not expand `~`). */
export async function resolveRemoteWorkdir(target: DeployTarget, workdir: string): Promise<string> {
  if (workdir.startsWith('/')) return workdir;
  const r = await target.exec('printf %s "$HOME"');
  const home = r.stdout.trim();
  if (!home) throw new Error(`${target.name}: could not read $HOME to place workdir ${workdir}; give an absolute workdir in the profile`);
  return posix.join(home, workdir.replace(/^~\/?/, ''));
}

export async function deployBundle(target: DeployTarget, bundle: TrainerBundle, workdir: string, opts: { onProgress?: (p: DeployProgress) => void; signal?: AbortSignal } = {}): Promise<DeployResult> {
  const total = bundle.files.reduce((s, f) => s + f.bytes, 0);
  const progress = (phase: DeployProgress['phase'], bytes: number, message?: string) => opts.onProgress?.({ host: target.name, phase, bytes, totalBytes: total, ...(message ? { message } : {}) });
  const wd = await resolveRemoteWorkdir(target, workdir);
  const dir = remoteBundleDir(wd, bundle.hash);
  progress('check', 0);
  const check = await target.exec(`test -f ${shellQuote(posix.join(dir, '.complete'))} && echo present || echo absent`, opts);
  if (check.stdout.trim() === 'present') {
    progress('cached', total, `already deployed at ${dir}`);
    return { host: target.name, ok: true, cached: true, bytesSent: 0, remoteDir: dir };
  }
  const tmp = `${dir}.partial-${process.pid}-${Date.now()}`;
  const dirs = [...new Set(bundle.files.map((f) => posix.dirname(posix.join(tmp, f.path))))];
  const mk = await target.exec(`mkdir -p ${dirs.map(shellQuote).join(' ')}`, opts);
  if (mk.code !== 0) throw new Error(`${target.name}: cannot create ${tmp}: ${mk.stderr.trim()} (check the profile's workdir and permissions)`);
  let sent = 0;
  for (const f of bundle.files) {
    const before = sent;
    await target.upload(join(bundle.dir, f.path), posix.join(tmp, f.path), {
      onProgress: (b) => progress('upload', before + b),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    sent += f.bytes;
    progress('upload', sent);
  }
  progress('verify', sent);
  const sums = bundle.files.map((f) => `${f.sha256}  ${f.path}`).join('\n');
  const verify = await target.exec(
    `cd ${shellQuote(tmp)} && printf '%s\\n' ${shellQuote(sums)} > .sha256 && (sha256sum -c --quiet .sha256 2>&1 || shasum -a 256 -c --quiet .sha256 2>&1)`,
    opts,
  );
  if (verify.code !== 0) {
    await target.exec(`rm -rf ${shellQuote(tmp)}`);
    throw new Error(`${target.name}: the uploaded bundle failed its sha256 check (${(verify.stdout + verify.stderr).trim().slice(0, 300)}); deploy again`);
  }
  // Publish: if another deploy won the race, keep theirs.
  const publish = await target.exec(`touch ${shellQuote(posix.join(tmp, '.complete'))} && (mv -T ${shellQuote(tmp)} ${shellQuote(dir)} 2>/dev/null || rm -rf ${shellQuote(tmp)}); test -f ${shellQuote(posix.join(dir, '.complete'))}`, opts);
  if (publish.code !== 0) throw new Error(`${target.name}: could not publish ${dir}: ${publish.stderr.trim()}`);
  progress('done', sent, `deployed to ${dir}`);
  return { host: target.name, ok: true, cached: false, bytesSent: sent, remoteDir: dir };
}
