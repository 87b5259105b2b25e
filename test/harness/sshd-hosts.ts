// Real OpenSSH hosts for tests. Each host is an `sshd` in its own network namespace with its own
// 10.x address, host key, workdir and log, joined by a bridge in the root namespace (so the test
// process reaches them like a cluster). Hosts listed in `privateHosts` are not on the bridge:
// they have a point-to-point link to host 0 only, so reaching them needs ProxyJump through it.
// Without netns (not root, no iproute2) it falls back to sshd on 127.0.0.2, .3, ... .
//
// Cleanup is guaranteed three ways: dispose() (call it in afterAll), a process 'exit' hook, and
// removal at the next start of anything a killed run registered (see netns.ts).
// The parts live beside it, by job: sshd-network.ts (namespaces, bridge, links, the client-path cut)
// and sshd-daemon.ts (keys, sshd_config, starting sshd, session processes).
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { SshEndpoint } from '../../electron/core/ssh';
import { MARKER_VAR, cleanupStale, ip, markedProcesses, netnsAvailable, processMentions, register, teardownSync, type Registration } from './netns';
import { keygen, listProcesses, pidRunning, spawnSshd, waitForListening, writeSshdConfig, type ProcInfo } from './sshd-daemon';
import { buildNamespaces, loopbackAddresses, setClientPath } from './sshd-network';

export type { ProcInfo } from './sshd-daemon';

const execFileP = promisify(execFile);

export type HarnessMode = 'netns' | 'loopback';

export interface StartHostsOptions {
  /** 'auto' (default) uses netns when possible; COHORT_TEST_SSHD_MODE=loopback forces the fallback. */
  mode?: 'auto' | HarnessMode;
  /** 0-based indices of hosts reachable only from host 0 (netns mode only; ignored in loopback). */
  privateHosts?: number[];
  /** Extra sshd_config lines for every host. */
  sshdConfig?: string[];
  /** known_hosts content: 'trusted' (every host's key, the default) or 'empty'. */
  knownHosts?: 'trusted' | 'empty';
  /** Extra environment for every session (sshd SetEnv), e.g. SLURM_CONF on a Slurm login node. */
  sessionEnv?: Record<string, string>;
  signal?: AbortSignal;
}

export interface SshdHost {
  name: string;
  index: number;
  address: string;
  port: number;
  user: string;
  /** This host's own working directory (namespaces share the filesystem). */
  workdir: string;
  /** $HOME of sessions on this host (sshd SetEnv); the login directory is still root's passwd home. */
  home: string;
  hostKeyPath: string;
  /** `ssh-ed25519 AAAA...` (no comment), as it appears in known_hosts. */
  hostPublicKey: string;
  namespace?: string;
  sshdPid: number;
  logPath: string;
  configPath: string;
  /** Only reachable through host 0 (ProxyJump). */
  isPrivate: boolean;
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface SshdCluster {
  id: string;
  mode: HarnessMode;
  dir: string;
  hosts: SshdHost[];
  user: string;
  clientKeyPath: string;
  clientPublicKey: string;
  authorizedKeysPath: string;
  /** Trusted known_hosts (or empty, per options). Tests that change it should copy it first. */
  knownHostsPath: string;
  /** An address on the hosts' network where nothing answers (connect attempts hang); netns mode only. */
  unusedAddress?: string;
  /** The endpoint for host i (root, the client key), with overrides. */
  endpoint(host: number | SshdHost, overrides?: Partial<SshEndpoint>): SshEndpoint;
  /** Adds a public key line to authorized_keys (sshd reads it on each login). */
  authorize(publicKeyLine: string): Promise<void>;
  /** Runs a shell command inside the host's namespace (not over SSH): for assertions. */
  exec(host: number | SshdHost, command: string): Promise<CommandResult>;
  /** Processes started through this host's sshd sessions (found by the SetEnv marker), sshd itself excluded. */
  processes(host: number | SshdHost): Promise<ProcInfo[]>;
  sshdLog(host: number | SshdHost): Promise<string>;
  /** Takes the host's network link down/up (netns mode): connections stall, keepalives fail. */
  setLink(host: number | SshdHost, up: boolean): Promise<void>;
  /**
   * Starts the host's sshd again after a test killed it (a host back from a crash or a reboot, its
   * workdir kept): same config, host key and address; resolves once it listens. Updates sshdPid.
   */
  restartSshd(host: number | SshdHost): Promise<void>;
  /**
   * Cuts (up=false) or restores the path between this process (the client, in the root namespace)
   * and every host, leaving host-to-host traffic alone (netns mode): packets are dropped both ways,
   * as on a dead Wi-Fi link. Client to hosts: a blackhole qdisc on the bridge's own interface (what
   * the bridge forwards between hosts never passes it); hosts to client: each host's eth0 sends
   * packets for the bridge address into a blackhole class. Idempotent.
   */
  setClientPath(up: boolean): Promise<void>;
  /** Kills everything, removes namespaces and links, deletes the directory. Idempotent. */
  dispose(): Promise<void>;
}

const live = new Map<string, Registration>();
let exitHookInstalled = false;
let counter = 0;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const r of live.values()) teardownSync(r);
  });
}

/** Why sshd tests cannot run here (for describe.skipIf), or undefined when they can. */
export const SSHD_MISSING: string | undefined = existsSync('/usr/sbin/sshd') ? undefined : 'OpenSSH server missing: apt-get install openssh-server';

/** The mode startHosts picks with mode 'auto' (for it.runIf at collection time). */
export async function harnessMode(requested: StartHostsOptions['mode'] = 'auto'): Promise<HarnessMode> {
  const forced = process.env.COHORT_TEST_SSHD_MODE;
  const wanted = requested !== 'auto' ? requested : forced === 'loopback' || forced === 'netns' ? forced : 'auto';
  return wanted === 'auto' ? ((await netnsAvailable()) ? 'netns' : 'loopback') : wanted;
}

export async function startHosts(n = 3, opts: StartHostsOptions = {}): Promise<SshdCluster> {
  cleanupStale();
  installExitHook();
  const mode = await harnessMode(opts.mode);
  if (mode === 'netns' && !(await netnsAvailable())) throw new Error('netns mode requested but `ip netns add` does not work here (root and iproute2 needed)');
  if (mode === 'loopback' && n > 250) throw new Error('at most 250 loopback hosts');

  const sid = `${process.pid.toString(36)}${(counter++).toString(36)}`;
  const id = `cohort-${sid}`;
  const dir = join('/tmp', `cohort-sshd-${sid}`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const reg: Registration = { id, ownerPid: process.pid, namespaces: [], links: [], routes: [], subnetLocks: [], pids: [], dir };
  live.set(id, reg);
  register(reg);

  try {
    const user = 'root';
    const clientKeyPath = join(dir, 'client_ed25519');
    await keygen(clientKeyPath, 'cohort-test-client');
    const clientPublicKey = (await readFile(`${clientKeyPath}.pub`, 'utf8')).trim();
    const authorizedKeysPath = join(dir, 'authorized_keys');
    await writeFile(authorizedKeysPath, clientPublicKey + '\n', { mode: 0o600 });
    await mkdir('/run/sshd', { recursive: true, mode: 0o755 });

    const privateSet = new Set(mode === 'netns' ? (opts.privateHosts ?? []) : []);
    if (privateSet.has(0)) throw new Error('host 0 is the jump host and cannot be private');
    const net = mode === 'netns' ? await buildNamespaces(reg, sid, n, privateSet) : await loopbackAddresses(n);
    const { addresses, namespaces, ports, unusedAddress, clientAddress, bridgeName } = net;

    const hosts: SshdHost[] = [];
    for (let i = 0; i < n; i++) {
      const name = `h${i + 1}`;
      const hdir = join(dir, name);
      const workdir = join(hdir, 'work');
      const home = join(hdir, 'home');
      await mkdir(workdir, { recursive: true });
      await mkdir(home, { recursive: true });
      const hostKeyPath = join(hdir, 'ssh_host_ed25519_key');
      await keygen(hostKeyPath, `${id}-${name}`);
      const hostPublicKey = (await readFile(`${hostKeyPath}.pub`, 'utf8')).trim().split(/\s+/).slice(0, 2).join(' ');
      const configPath = join(hdir, 'sshd_config');
      const logPath = join(hdir, 'sshd.log');
      await writeSshdConfig(configPath, { port: ports[i]!, address: addresses[i]!, hostKeyPath, pidFile: join(hdir, 'sshd.pid'), authorizedKeysPath, marker: `${id}/${name}`, home, sessionEnv: opts.sessionEnv, extra: opts.sshdConfig });
      const ns = namespaces[i];
      const sshdPid = await spawnSshd(name, configPath, logPath, ns, reg);
      hosts.push({ name, index: i, address: addresses[i]!, port: ports[i]!, user, workdir, home, hostKeyPath, hostPublicKey, ...(ns ? { namespace: ns } : {}), sshdPid, logPath, configPath, isPrivate: privateSet.has(i) });
    }
    await Promise.all(hosts.map((h) => waitForListening(h, opts.signal)));

    const knownHostsPath = join(dir, 'known_hosts');
    await writeFile(knownHostsPath, opts.knownHosts === 'empty' ? '' : hosts.map((h) => `${h.port === 22 ? h.address : `[${h.address}]:${h.port}`} ${h.hostPublicKey}\n`).join(''), { mode: 0o600 });

    const hostOf = (h: number | SshdHost): SshdHost => {
      const host = typeof h === 'number' ? hosts[h] : h;
      if (!host) throw new Error(`no host ${String(h)} (have ${hosts.length})`);
      return host;
    };
    let disposed = false;
    const cluster: SshdCluster = {
      id,
      mode,
      dir,
      hosts,
      user,
      clientKeyPath,
      clientPublicKey,
      authorizedKeysPath,
      knownHostsPath,
      ...(unusedAddress ? { unusedAddress } : {}),
      endpoint: (h, overrides = {}) => {
        const host = hostOf(h);
        return { name: host.name, address: host.address, port: host.port, user, identityFile: clientKeyPath, ...overrides };
      },
      authorize: async (line) => {
        await appendFile(authorizedKeysPath, line.trim() + '\n');
      },
      exec: async (h, command) => {
        const host = hostOf(h);
        const argv = host.namespace ? ['ip', 'netns', 'exec', host.namespace, 'sh', '-c', command] : ['sh', '-c', command];
        try {
          const r = await execFileP(argv[0], argv.slice(1), { encoding: 'utf8' });
          return { code: 0, stdout: r.stdout, stderr: r.stderr };
        } catch (err) {
          const e = err as { code?: unknown; stdout?: string; stderr?: string };
          return { code: typeof e.code === 'number' ? e.code : null, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
        }
      },
      processes: async (h) => listProcesses(`${MARKER_VAR}=${id}/${hostOf(h).name}\0`),
      sshdLog: (h) => readFile(hostOf(h).logPath, 'utf8'),
      setLink: async (h, up) => {
        const host = hostOf(h);
        if (!host.namespace) throw new Error('setLink needs netns mode');
        await ip('-n', host.namespace, 'link', 'set', host.isPrivate ? `cy-${sid}-${host.index}` : 'eth0', up ? 'up' : 'down');
      },
      restartSshd: async (h) => {
        const host = hostOf(h);
        if (pidRunning(host.sshdPid)) throw new Error(`sshd of ${host.name} still runs (pid ${host.sshdPid}): kill it first`);
        const logged = (await readFile(host.logPath, 'utf8').catch(() => '')).length;
        host.sshdPid = await spawnSshd(host.name, host.configPath, host.logPath, host.namespace, reg);
        await waitForListening(host, undefined, logged);
      },
      setClientPath: async (up) => {
        if (!bridgeName || !clientAddress) throw new Error('setClientPath needs netns mode');
        await setClientPath(bridgeName, clientAddress, hosts.filter((h) => h.namespace && !h.isPrivate).map((h) => h.namespace!), up);
      },
      dispose: async () => {
        if (disposed) return;
        disposed = true;
        live.delete(id);
        teardownSync(reg);
      },
    };
    return cluster;
  } catch (err) {
    live.delete(id);
    teardownSync(reg);
    throw err;
  }
}

/** What a cluster left behind (all empty after dispose): for tests that assert nothing leaked. */
export async function leftovers(id: string): Promise<{ namespaces: string[]; links: string[]; processes: number[] }> {
  const namespaces = (await ip('netns', 'list').catch(() => '')).split('\n').map((l) => l.split(' ')[0]).filter((n) => n.startsWith(`${id}-`));
  const sid = id.replace(/^cohort-/, '');
  const links = (await ip('-o', 'link').catch(() => '')).split('\n').map((l) => l.split(': ')[1]?.split('@')[0] ?? '').filter((n) => n.endsWith(sid) || n.includes(`-${sid}-`));
  // Session processes (marker) and the sshd daemons themselves (their command line names the cluster dir).
  const daemons = readdirSync('/proc').filter((d) => /^\d+$/.test(d) && processMentions(Number(d), `/tmp/cohort-sshd-${sid}/`)).map(Number);
  return { namespaces, links, processes: [...new Set([...markedProcesses(`${MARKER_VAR}=${id}/`), ...daemons])] };
}

/** The trainer's processes (agents, ranks) on the given hosts (index into cluster.hosts; default all), as `host: pid cmd`. */
export async function trainerProcesses(cluster: SshdCluster, hosts: number[] = cluster.hosts.map((_, i) => i)): Promise<string[]> {
  const all = await Promise.all(hosts.map(async (i) => (await cluster.processes(i)).map((p) => `${cluster.hosts[i]!.name}: ${p.pid} ${p.cmd}`)));
  return all.flat().filter((p) => /cohort-trainer\.mjs|cohort_run=/.test(p));
}

/**
 * Host i dies as a machine does (netns mode): off the network, then its sshd and every process on
 * it SIGKILLed; its disk (the workdir) is kept. Resolves with when the link went down, once no
 * process is left on it. cluster.restartSshd(i) and cluster.setLink(i, true) bring it back.
 */
export async function crashHost(cluster: SshdCluster, i: number): Promise<number> {
  await cluster.setLink(i, false);
  const at = Date.now();
  const procs = await cluster.processes(i);
  for (const pid of [cluster.hosts[i]!.sshdPid, ...procs.map((p) => p.pid)]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone already */
    }
  }
  const end = Date.now() + 10_000;
  while ((await cluster.processes(i)).length > 0) {
    if (Date.now() > end) throw new Error(`${cluster.hosts[i]!.name}: processes still running 10 s after SIGKILL`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return at;
}
