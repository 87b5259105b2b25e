// Deploy: put the trainer bundle on a host at <workdir>/trainer/<content-hash>/, once. The hash
// (resources/trainer/manifest.json) names the directory, so a second deploy of the same bundle
// finds it there and transfers nothing, after checking on the host that every file in it still
// has its manifest sha256 (a corrupted or truncated bundle is removed and uploaded again; `force`
// always uploads). The files travel as one gzipped tar (bundle-archive.ts says why), unpacked into
// a temporary sibling (`<dir>.partial-<pid>-<ms>`); every file's sha256 is checked on the host,
// then one `mv` publishes the directory: a half upload is never mistaken for a deployed bundle. A
// failed upload removes its partial directory; partial directories older than an hour (a deploy
// killed mid-way) are removed by the next deploy.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { CohortError } from '../../../trainer/protocol';
import type { DeployProgress, DeployResult } from '../../common';
import type { TrainerBundle } from '../trainer-bundle';
import { bundleArchive, untarCommand } from './bundle-archive';
import { shellQuote } from './probe';

/** The part of an SSH session deploy needs (core/ssh's HostSession provides it). */
export interface DeployTarget {
  readonly name: string;
  exec(command: string, opts?: { signal?: AbortSignal }): Promise<{ code: number | null; stdout: string; stderr: string }>;
  upload(localPath: string, remotePath: string, opts?: { onProgress?: (bytes: number) => void; signal?: AbortSignal }): Promise<void>;
}

/** A deploy failure on one host (exit code 3 in the CLI, like a connection failure: the host is the problem). */
export class DeployError extends CohortError {
  constructor(message: string, hint = '', options?: { cause?: unknown }) {
    super('deploy-failed', message, { hint, ...options });
    this.name = 'DeployError';
  }
}

/** A shell command that checks sums in `sha256sum -c` format read from `input` (a file, or - for stdin): coreutils' sha256sum, else Perl's shasum (macOS). */
export const sha256CheckCommand = (input: string): string => `(sha256sum -c --quiet ${input} 2>&1 || shasum -a 256 -c --quiet ${input} 2>&1)`;

export function remoteBundleDir(workdir: string, hash: string): string {
  return posix.join(workdir, 'trainer', hash.slice(0, 16));
}

/** Resolves `~/x` and relative workdirs against the remote home (SFTP does not expand `~`). */
export async function resolveRemoteWorkdir(target: DeployTarget, workdir: string): Promise<string> {
  if (workdir.startsWith('/')) return workdir;
  const r = await target.exec('printf %s "$HOME"');
  const home = r.stdout.trim();
  if (!home) throw new DeployError(`${target.name}: could not read $HOME to place workdir ${workdir}; give an absolute workdir in the profile`);
  return posix.join(home, workdir.replace(/^~\/?/, ''));
}

export async function deployBundle(target: DeployTarget, bundle: TrainerBundle, workdir: string, opts: { onProgress?: (p: DeployProgress) => void; signal?: AbortSignal; force?: boolean } = {}): Promise<DeployResult> {
  // The bundle's size while checking and when it is already there; the archive's once uploading (what
  // goes over the wire). The archive is made only for an upload: most deploys (every launch after the
  // first) find the bundle present, and gzipping ~3 MB there would be CPU for nothing.
  let total = bundle.files.reduce((s, f) => s + f.bytes, 0);
  const progress = (phase: DeployProgress['phase'], bytes: number, message?: string) => opts.onProgress?.({ host: target.name, phase, bytes, totalBytes: total, ...(message ? { message } : {}) });
  const wd = await resolveRemoteWorkdir(target, workdir);
  const dir = remoteBundleDir(wd, bundle.hash);
  progress('check', 0);
  // Partial uploads left by a deploy that was killed (an hour is far past any upload's length).
  await target.exec(`find ${shellQuote(posix.dirname(dir))} -maxdepth 1 -name ${shellQuote(`${posix.basename(dir)}.partial-*`)} -mmin +60 -exec rm -rf {} + 2>/dev/null; true`, opts);
  // The manifest's sums, checked against the files present (the .sha256 inside the directory could be damaged too).
  const sums = bundle.files.map((f) => `${f.sha256}  ${f.path}`).join('\n');
  const sumCheck = `printf '%s\\n' ${shellQuote(sums)} | ${sha256CheckCommand('-')}`;
  let repaired = false;
  if (!opts.force) {
    const check = await target.exec(`cd ${shellQuote(dir)} 2>/dev/null || { echo absent; exit 0; }; test -f .complete || { echo absent; exit 0; }; ${sumCheck} >/dev/null && echo present || echo corrupt`, opts);
    const state = check.stdout.trim().split('\n').at(-1);
    if (state === 'present') {
      progress('cached', total, `already deployed at ${dir} (every file matches the manifest)`);
      return { host: target.name, ok: true, cached: true, bytesSent: 0, remoteDir: dir };
    }
    repaired = state === 'corrupt';
    if (repaired) progress('check', 0, `${dir} is damaged (a file differs from the manifest); uploading it again`);
  }
  const tmp = `${dir}.partial-${process.pid}-${Date.now()}`;
  const dirs = [...new Set(bundle.files.map((f) => posix.dirname(posix.join(tmp, f.path))))];
  const mk = await target.exec(`mkdir -p ${dirs.map(shellQuote).join(' ')}`, opts);
  if (mk.code !== 0) throw new DeployError(`${target.name}: cannot create ${tmp}: ${mk.stderr.trim()}`, "check the profile's workdir and its permissions");
  const archive = bundleArchive(bundle);
  total = archive.length;
  let sent = 0;
  const local = mkdtempSync(join(tmpdir(), 'cohort-deploy-'));
  try {
    const localArchive = join(local, 'bundle.tar.gz');
    writeFileSync(localArchive, archive);
    const remoteArchive = posix.join(tmp, '.bundle.tar.gz');
    await target.upload(localArchive, remoteArchive, {
      onProgress: (b) => progress('upload', b),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    sent = archive.length;
    progress('upload', sent);
    const unpack = await target.exec(`cd ${shellQuote(tmp)} && ${untarCommand('.bundle.tar.gz', shellQuote)}`, opts);
    if (unpack.code !== 0) {
      throw new DeployError(`${target.name}: could not unpack the trainer bundle in ${tmp} (${(unpack.stdout + unpack.stderr).trim().slice(0, 300)})`, 'the host needs tar and gzip (every Linux and macOS has them); check free space in the workdir');
    }
    progress('verify', sent);
    const verify = await target.exec(`cd ${shellQuote(tmp)} && printf '%s\\n' ${shellQuote(sums)} > .sha256 && ${sumCheck}`, opts);
    if (verify.code !== 0) {
      throw new DeployError(`${target.name}: the uploaded bundle failed its sha256 check (${(verify.stdout + verify.stderr).trim().slice(0, 300)})`, 'deploy again; if it repeats, check the disk on the host');
    }
    // Publish: a damaged or forced-over bundle is replaced; if another deploy won the race, keep theirs.
    const replace = repaired || opts.force ? `rm -rf ${shellQuote(dir)} && ` : '';
    const publish = await target.exec(`touch ${shellQuote(posix.join(tmp, '.complete'))} && ${replace}(mv -T ${shellQuote(tmp)} ${shellQuote(dir)} 2>/dev/null || rm -rf ${shellQuote(tmp)}); test -f ${shellQuote(posix.join(dir, '.complete'))}`, opts);
    if (publish.code !== 0) throw new DeployError(`${target.name}: could not publish ${dir}: ${publish.stderr.trim()}`, 'check the disk and permissions on the host');
  } catch (err) {
    await target.exec(`rm -rf ${shellQuote(tmp)}`).catch(() => undefined); // no partial upload left behind
    throw err;
  } finally {
    rmSync(local, { recursive: true, force: true });
  }
  progress('done', sent, `${repaired ? 'repaired' : 'deployed to'} ${dir}`);
  return { host: target.name, ok: true, cached: false, bytesSent: sent, remoteDir: dir };
}
