// The sshd side of test/harness/sshd-hosts.ts: keys, each host's sshd_config, starting sshd (in its
// namespace or on loopback) and knowing when it listens, and the processes its sessions started.
import { execFile, spawn } from 'node:child_process';
import { open, readFile, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { MARKER_VAR, markedProcesses, register, type Registration } from './netns';

const execFileP = promisify(execFile);

export interface ProcInfo {
  pid: number;
  ppid: number;
  cmd: string;
}

export async function keygen(path: string, comment: string): Promise<void> {
  await execFileP('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', path]);
}

export interface SshdConfigInput {
  port: number;
  address: string;
  hostKeyPath: string;
  pidFile: string;
  authorizedKeysPath: string;
  /** `${cluster id}/${host name}`: the SetEnv marker every session process carries. */
  marker: string;
  home: string;
  sessionEnv?: Record<string, string>;
  extra?: string[];
}

export async function writeSshdConfig(configPath: string, c: SshdConfigInput): Promise<void> {
  await writeFile(
    configPath,
    [
      `Port ${c.port}`,
      `ListenAddress ${c.address}`,
      `HostKey ${c.hostKeyPath}`,
      `PidFile ${c.pidFile}`,
      `AuthorizedKeysFile ${c.authorizedKeysPath}`,
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin prohibit-password',
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'AllowTcpForwarding yes',
      'X11Forwarding no',
      'UseDNS no',
      'PrintMotd no',
      'LogLevel VERBOSE',
      'MaxStartups 100:30:200',
      'MaxSessions 64',
      // Every session process carries this marker, so processes() finds (and dispose() kills)
      // whatever a test started on this host, even after it re-parents. Its own HOME keeps the
      // hosts apart and skips the machine's ~/.bashrc (here: pyenv init, ~0.4 s per command).
      // sshd takes only the first SetEnv line, so both go on one.
      `SetEnv ${MARKER_VAR}=${c.marker} HOME=${c.home}${Object.entries(c.sessionEnv ?? {}).map(([k, v]) => ` ${k}=${v}`).join('')}`,
      'Subsystem sftp internal-sftp',
      ...(c.extra ?? []),
    ].join('\n') + '\n',
  );
}

/** Starts `sshd -D` with this config (in the namespace, if any), its pid registered; returns the pid. */
export async function spawnSshd(name: string, configPath: string, logPath: string, namespace: string | undefined, reg: Registration): Promise<number> {
  const cmd = namespace ? ['ip', 'netns', 'exec', namespace, '/usr/sbin/sshd', '-D', '-e', '-f', configPath] : ['/usr/sbin/sshd', '-D', '-e', '-f', configPath];
  const log = await open(logPath, 'a');
  const child = spawn(cmd[0]!, cmd.slice(1), { stdio: ['ignore', log.fd, log.fd] });
  await log.close();
  child.unref();
  if (!child.pid) throw new Error(`cannot start sshd for ${name}`);
  reg.pids.push(child.pid);
  register(reg);
  return child.pid;
}

/** Resolves once the host's log (from char fromChar on) says sshd listens; throws on its error or exit. */
export async function waitForListening(h: { name: string; logPath: string; sshdPid: number }, signal?: AbortSignal, fromChar = 0): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const log = (await readFile(h.logPath, 'utf8').catch(() => '')).slice(fromChar);
    if (log.includes('Server listening on')) return;
    if (/fatal|error|Bad configuration/i.test(log) || !pidRunning(h.sshdPid)) throw new Error(`sshd for ${h.name} did not start:\n${log}`);
    if (Date.now() > deadline) throw new Error(`sshd for ${h.name} not listening after 15 s:\n${log}`);
    signal?.throwIfAborted();
    await new Promise((r) => setTimeout(r, 30));
  }
}

export function pidRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Processes carrying the marker (sshd itself excluded). */
export async function listProcesses(marker: string): Promise<ProcInfo[]> {
  const out: ProcInfo[] = [];
  for (const pid of markedProcesses(marker)) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      // comm may contain spaces and parens: fields after the last ')' are fixed.
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmd = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean).join(' ');
      if (comm === 'sshd' || cmd.startsWith('sshd:')) continue;
      out.push({ pid, ppid, cmd: cmd || `[${comm}]` });
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}
