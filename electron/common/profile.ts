// Cluster profiles: the saved description of a set of hosts, shared by the CLI, core's
// ProfileStore and the renderer's forms. Plain TypeScript (the renderer validates with it), so
// nothing here touches the filesystem or SSH; core stores and resolves, this file only decodes.
//
// Errors name the profile, the host and the field, e.g.
//   profile "lab": hosts[1] (h2).port: must be ≤ 65535, got 70000
import { CohortError, ConfigError, FLAG_OF, decodeTrainConfig, overlayTrainConfig, type TrainConfig } from '../../trainer/protocol';
import { DecodeError, arr, describe, obj, optBool, optNum, optStr, str, strRecord, type Obj } from '../../trainer/protocol/validate';
import { refusedSbatchWord } from './sbatch-args';

export const PROFILE_VERSION = 1;
/** The built-in profile: ranks run on this machine without SSH. Its name is reserved. */
export const LOCAL_PROFILE_NAME = 'local';
/** Where a host's files go when the profile gives no `workdir` (relative to the remote login directory). */
export const DEFAULT_WORKDIR = '.cohort';

export interface ProfileHost {
  /** Unique within the profile; used in events, logs and errors. */
  name: string;
  /** Host name or IP address to connect to (OpenSSH's HostName). */
  address: string;
  port: number;
  /** Remote login name; absent means "the local user name" (resolved by core, as OpenSSH does). */
  user?: string;
  /** Private key path; absent means ssh-agent (SSH_AUTH_SOCK) only. */
  identityFile?: string;
  /**
   * OpenSSH ProxyJump syntax: comma-separated hops `[user@]host[:port]`, outermost first. A hop
   * whose host is the name of another host in the profile uses that host's settings.
   */
  proxyJump?: string;
  /** Ranks to start on this host (one per GPU slot). */
  slots: number;
  /** GPU indices, one per slot (exported as CUDA_VISIBLE_DEVICES per rank). */
  gpus?: number[];
  workdir: string;
  /** The Python the torch engine uses on this host (path or name on its PATH); absent: the agent picks (CUDA torch first). */
  python?: string;
  /** Extra environment for every rank on this host. */
  env: Record<string, string>;
  /**
   * A spare host (issue 21 item 5): it runs nothing at the start; a run with restarts that loses a
   * follower host excludes that host and moves its ranks here. Not the first host (the leader).
   */
  spare?: true;
}

/**
 * A batch scheduler that places the run's agents instead of a host list (issue 16). The profile's
 * one host is the login node (reached over SSH as any host); the compute nodes come from the
 * allocation. Rendezvous comes from the allocation too (first node = master), so a scheduler
 * profile has no masterAddr / masterPort.
 */
export interface SlurmScheduler {
  kind: 'slurm';
  /** `sbatch --partition`; absent: the cluster's default partition. */
  partition?: string;
  /** `--nodes`: one Cohort agent per node. */
  nodes: number;
  /** `--ntasks-per-node`: ranks per node (one per GPU on GPU partitions). */
  tasksPerNode: number;
  /** `--gpus-per-node`; absent: no GPUs asked for. */
  gpusPerNode?: number;
  /** `--time` in Slurm's format (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS); absent: the partition's default. */
  timeLimit?: string;
  /** `--account`; absent: the user's default account. */
  account?: string;
  /** More sbatch options, passed as given (each one `--name`, `--name=value` or `-Xvalue`); the ones Cohort sets are refused however spelled (sbatch-args.ts). */
  extraArgs: string[];
}

export type Scheduler = SlurmScheduler;

const TIME_RE = /^(?:\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}|UNLIMITED|INFINITE)$/;
const SLURM_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export interface Profile {
  v: typeof PROFILE_VERSION;
  name: string;
  hosts: ProfileHost[];
  /** Set: a Slurm cluster reached through its login node (`hosts` is exactly that node). */
  scheduler?: Scheduler;
  /** Address ranks use to reach rank 0; default: the first host's address. */
  masterAddr?: string;
  masterPort?: number;
  /**
   * Run defaults: a partial TrainConfig, stored as given (so later changes to the built-in
   * defaults still apply) and validated with decodeTrainConfig; apply with resolveRunConfig.
   */
  defaults?: Partial<TrainConfig>;
  /** The last probe result, stored with the profile by core (shape owned by the prober). */
  lastProbe?: unknown;
}

export class ProfileError extends CohortError {
  constructor(
    readonly profile: string,
    /** `hosts[1] (h2).port`, `defaults.batchSize`, `name`, ... ('' for the whole document). */
    readonly field: string,
    readonly problem: string,
    readonly host?: string,
  ) {
    super('profile-invalid', `profile ${JSON.stringify(profile)}: ${field ? `${field}: ` : ''}${problem}`);
    this.name = 'ProfileError';
  }
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Profile and host names: letters, digits, ".", "_", "-", starting with a letter or digit (also safe as a file name). */
export function isValidName(name: string): boolean {
  return NAME_RE.test(name);
}
/** One ProxyJump hop: [user@]host[:port]; host may be [ipv6]. */
const HOP_RE = /^(?:([^@\s,]+)@)?(\[[^\]\s]+\]|[^:@\s,[\]]+)(?::(\d{1,5}))?$/;

export interface JumpHop {
  user?: string;
  host: string;
  port?: number;
}

/** Parses an OpenSSH ProxyJump value into hops (outermost first). Throws DecodeError on bad syntax. */
export function parseProxyJump(value: string, path = 'proxyJump'): JumpHop[] {
  if (value.trim() === '') throw new DecodeError(path, 'must not be empty (omit it for a direct connection)');
  return value.split(',').map((raw, i) => {
    const m = HOP_RE.exec(raw.trim());
    if (!m) throw new DecodeError(path, `hop ${i + 1} ${describe(raw)} is not [user@]host[:port]`);
    const host = m[2].startsWith('[') ? m[2].slice(1, -1) : m[2];
    const port = m[3] === undefined ? undefined : Number(m[3]);
    if (port !== undefined && (port < 1 || port > 65535)) throw new DecodeError(path, `hop ${i + 1} port must be 1..65535, got ${port}`);
    return { ...(m[1] ? { user: m[1] } : {}), host, ...(port === undefined ? {} : { port }) };
  });
}

/**
 * Validates an unknown value (parsed JSON, a form's state) as a profile and fills defaults.
 * Throws ProfileError naming the profile, host and field.
 */
export function decodeProfile(input: unknown, opts: { allowLocal?: boolean } = {}): Profile {
  let o: Obj;
  try {
    o = obj(input, '');
  } catch (err) {
    throw new ProfileError('?', '', err instanceof DecodeError ? err.problem : String(err));
  }
  const profileName = typeof o.name === 'string' && o.name !== '' ? o.name : '?';
  const at = <T>(read: () => T, host?: string): T => {
    try {
      return read();
    } catch (err) {
      if (err instanceof DecodeError) throw new ProfileError(profileName, err.path, err.problem, host);
      throw err;
    }
  };

  const name = at(() => str(o, 'name', '', { nonEmpty: true }));
  if (!NAME_RE.test(name)) throw new ProfileError(profileName, 'name', `use letters, digits, ".", "_" or "-" (at most 64), got ${describe(name)}`);
  if (name === LOCAL_PROFILE_NAME && !opts.allowLocal) {
    throw new ProfileError(name, 'name', `"${LOCAL_PROFILE_NAME}" is reserved for the built-in profile (no SSH); choose another name`);
  }
  if (o.v !== undefined && o.v !== PROFILE_VERSION) {
    throw new ProfileError(name, 'v', `unsupported profile version ${describe(o.v)} (this Cohort reads version ${PROFILE_VERSION})`);
  }
  const known = new Set(['v', 'name', 'hosts', 'scheduler', 'masterAddr', 'masterPort', 'defaults', 'lastProbe']);
  for (const key of Object.keys(o)) if (!known.has(key)) throw new ProfileError(name, key, `unknown field (expected one of ${[...known].join(', ')})`);

  const rawHosts = at(() => arr(o, 'hosts', '', (v) => v));
  if (rawHosts.length === 0) throw new ProfileError(name, 'hosts', 'needs at least one host');
  const hosts = rawHosts.map((raw, i) => decodeHost(raw, i, at));

  const seen = new Map<string, number>();
  hosts.forEach((h, i) => {
    const prev = seen.get(h.name);
    if (prev !== undefined) throw new ProfileError(name, `hosts[${i}] (${h.name}).name`, `duplicate host name (also hosts[${prev}])`, h.name);
    seen.set(h.name, i);
  });
  hosts.forEach((h, i) => {
    if (h.proxyJump === undefined) return;
    const hops = at(() => parseProxyJump(h.proxyJump as string, `hosts[${i}] (${h.name}).proxyJump`), h.name);
    if (hops.some((hop) => hop.host === h.name)) {
      throw new ProfileError(name, `hosts[${i}] (${h.name}).proxyJump`, 'a host cannot jump through itself', h.name);
    }
  });

  checkSpares(name, hosts);

  const masterAddr = at(() => optStr(o, 'masterAddr', ''));
  if (masterAddr !== undefined && masterAddr.trim() === '') throw new ProfileError(name, 'masterAddr', 'must not be empty (omit it to use the first host)');
  const masterPort = at(() => optNum(o, 'masterPort', '', { int: true, min: 1, max: 65535 }));
  const defaults = o.defaults === undefined ? undefined : decodeRunDefaults(name, o.defaults);
  const scheduler = o.scheduler === undefined ? undefined : decodeScheduler(name, o.scheduler, at);
  if (scheduler) {
    if (hosts.length !== 1) throw new ProfileError(name, 'hosts', `a Slurm profile has exactly one host, the login node (got ${hosts.length}); the compute nodes come from the allocation (scheduler.nodes)`);
    if (hosts[0]!.slots !== 1 || hosts[0]!.gpus) throw new ProfileError(name, `hosts[0] (${hosts[0]!.name}).slots`, 'the login node runs no ranks; give ranks per node as scheduler.tasksPerNode and GPUs as scheduler.gpusPerNode', hosts[0]!.name);
    for (const f of ['masterAddr', 'masterPort'] as const) {
      if (o[f] !== undefined) throw new ProfileError(name, f, 'a Slurm run takes its rendezvous from the allocation (first node = master); remove it');
    }
  }

  return {
    v: PROFILE_VERSION,
    name,
    hosts,
    ...(scheduler === undefined ? {} : { scheduler }),
    ...(masterAddr === undefined ? {} : { masterAddr }),
    ...(masterPort === undefined ? {} : { masterPort }),
    ...(defaults === undefined ? {} : { defaults }),
    ...(o.lastProbe === undefined ? {} : { lastProbe: o.lastProbe }),
  };
}

function decodeHost(raw: unknown, i: number, at: <T>(read: () => T, host?: string) => T): ProfileHost {
  const h = at(() => obj(raw, `hosts[${i}]`));
  const hostName = typeof h.name === 'string' && h.name !== '' ? h.name : undefined;
  const p = hostName ? `hosts[${i}] (${hostName})` : `hosts[${i}]`;
  const read = <T>(fn: () => T): T => at(fn, hostName);
  const fail = (path: string, problem: string): never => read(() => {
    throw new DecodeError(path, problem);
  });

  const known = new Set(['name', 'address', 'port', 'user', 'identityFile', 'proxyJump', 'slots', 'gpus', 'workdir', 'python', 'env', 'spare']);
  for (const key of Object.keys(h)) {
    if (!known.has(key)) fail(`${p}.${key}`, `unknown field (expected one of ${[...known].join(', ')})`);
  }
  const name = read(() => str(h, 'name', p, { nonEmpty: true }));
  if (!NAME_RE.test(name)) fail(`${p}.name`, `use letters, digits, ".", "_" or "-" (at most 64), got ${describe(name)}`);
  const address = read(() => str(h, 'address', p, { nonEmpty: true }));
  if (/\s/.test(address)) fail(`${p}.address`, `must not contain spaces, got ${describe(address)}`);
  const port = read(() => optNum(h, 'port', p, { int: true, min: 1, max: 65535 })) ?? 22;
  const user = read(() => optStr(h, 'user', p));
  if (user !== undefined && (user === '' || /[\s@]/.test(user))) fail(`${p}.user`, `expected a login name, got ${describe(user)}`);
  const identityFile = read(() => optStr(h, 'identityFile', p));
  if (identityFile !== undefined && identityFile.trim() === '') fail(`${p}.identityFile`, 'must not be empty (omit it to use ssh-agent)');
  const proxyJump = read(() => optStr(h, 'proxyJump', p));
  const slots = read(() => optNum(h, 'slots', p, { int: true, min: 1, max: 1024 })) ?? 1;
  const gpus = h.gpus === undefined ? undefined : read(() => arr(h, 'gpus', p, (v, path) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new DecodeError(path, `expected a GPU index (integer ≥ 0), got ${describe(v)}`);
    return v;
  }));
  if (gpus !== undefined) {
    if (gpus.length !== slots) fail(`${p}.gpus`, `lists ${gpus.length} GPU(s) but slots is ${slots}; give one GPU index per slot`);
    if (new Set(gpus).size !== gpus.length) fail(`${p}.gpus`, `lists a GPU twice: ${JSON.stringify(gpus)}`);
  }
  const workdir = read(() => optStr(h, 'workdir', p)) ?? DEFAULT_WORKDIR;
  if (workdir.trim() === '') fail(`${p}.workdir`, 'must not be empty');
  const python = read(() => optStr(h, 'python', p));
  if (python !== undefined && (python.trim() === '' || /[\0\n]/.test(python))) fail(`${p}.python`, `expected an interpreter path such as /opt/venv/bin/python, got ${describe(python)}`);
  const env = h.env === undefined ? {} : read(() => strRecord(h, 'env', p));
  for (const key of Object.keys(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) fail(`${p}.env`, `${describe(key)} is not a valid environment variable name`);
  }
  const spare = read(() => optBool(h, 'spare', p));
  return {
    name,
    address,
    port,
    ...(user === undefined ? {} : { user }),
    ...(identityFile === undefined ? {} : { identityFile }),
    ...(proxyJump === undefined ? {} : { proxyJump }),
    slots,
    ...(gpus === undefined ? {} : { gpus }),
    workdir,
    ...(python === undefined ? {} : { python }),
    env,
    ...(spare ? { spare: true as const } : {}),
  };
}

function decodeScheduler(profile: string, raw: unknown, at: <T>(read: () => T) => T): Scheduler {
  const o = at(() => obj(raw, 'scheduler'));
  const p = 'scheduler';
  const fail = (field: string, problem: string): never => {
    throw new ProfileError(profile, `${p}.${field}`, problem);
  };
  const kind = o.kind;
  if (kind !== 'slurm') fail('kind', `unsupported scheduler ${describe(kind)}; the one supported is "slurm"`);
  const known = new Set(['kind', 'partition', 'nodes', 'tasksPerNode', 'gpusPerNode', 'timeLimit', 'account', 'extraArgs']);
  for (const key of Object.keys(o)) if (!known.has(key)) fail(key, `unknown field (expected one of ${[...known].join(', ')})`);
  const partition = at(() => optStr(o, 'partition', p));
  if (partition !== undefined && !SLURM_NAME_RE.test(partition)) fail('partition', `expected a partition name (sinfo -s lists them), got ${describe(partition)}`);
  const nodes = at(() => optNum(o, 'nodes', p, { int: true, min: 1, max: 4096 })) ?? 1;
  const tasksPerNode = at(() => optNum(o, 'tasksPerNode', p, { int: true, min: 1, max: 1024 })) ?? 1;
  const gpusPerNode = at(() => optNum(o, 'gpusPerNode', p, { int: true, min: 0, max: 64 }));
  const timeLimit = at(() => optStr(o, 'timeLimit', p));
  if (timeLimit !== undefined && !TIME_RE.test(timeLimit)) fail('timeLimit', `expected Slurm's time format (minutes, HH:MM:SS or D-HH:MM:SS, e.g. "02:00:00"), got ${describe(timeLimit)}`);
  const account = at(() => optStr(o, 'account', p));
  if (account !== undefined && !SLURM_NAME_RE.test(account)) fail('account', `expected an account name (sacctmgr show assoc user=$USER lists yours), got ${describe(account)}`);
  const extraArgs = o.extraArgs === undefined ? [] : at(() => arr(o, 'extraArgs', p, (v, path) => {
    if (typeof v !== 'string' || !/^--?[A-Za-z]/.test(v) || /[\0\n]/.test(v)) throw new DecodeError(path, `expected an sbatch option such as "--constraint=a100", got ${describe(v)}`);
    return v;
  }));
  // Read as sbatch's getopt reads them (-Jx, -pname, --job=x): an option Cohort sets is refused however spelled.
  extraArgs.forEach((a, i) => {
    const refused = refusedSbatchWord(a);
    if (refused) fail(`extraArgs[${i}]`, refused);
  });
  return {
    kind: 'slurm',
    ...(partition === undefined ? {} : { partition }),
    nodes,
    tasksPerNode,
    ...(gpusPerNode === undefined ? {} : { gpusPerNode }),
    ...(timeLimit === undefined ? {} : { timeLimit }),
    ...(account === undefined ? {} : { account }),
    extraArgs,
  };
}

const FIELD_OF_FLAG = new Map<string, keyof TrainConfig>(Object.entries(FLAG_OF).map(([k, flag]) => [flag, k as keyof TrainConfig]));

/** Validates run defaults without filling them in: the partial must be a valid start for a run. */
function decodeRunDefaults(profile: string, value: unknown): Partial<TrainConfig> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ProfileError(profile, 'defaults', `expected an object of run settings, got ${describe(value)}`);
  }
  try {
    decodeTrainConfig(value);
  } catch (err) {
    if (err instanceof ConfigError) {
      const field = FIELD_OF_FLAG.get(err.flag) ?? err.flag;
      throw new ProfileError(profile, `defaults.${field}`, err.message.slice(err.flag.length + 2));
    }
    throw err;
  }
  return { ...(value as Partial<TrainConfig>) };
}

/**
 * The run config for a launch: built-in defaults ← profile defaults ← explicit overrides. The one
 * place profile defaults are merged (core's startRun calls it for every client).
 */
export function resolveRunConfig(profile: Pick<Profile, 'defaults'>, overrides: Partial<TrainConfig> = {}): TrainConfig {
  return decodeTrainConfig(overlayTrainConfig(profile.defaults ?? {}, overrides));
}

/** The built-in profile: one host, this machine, no SSH; `slots` is what the user asks for. */
export function localProfile(slots = 1, workdir = DEFAULT_WORKDIR): Profile {
  return {
    v: PROFILE_VERSION,
    name: LOCAL_PROFILE_NAME,
    hosts: [{ name: LOCAL_PROFILE_NAME, address: '127.0.0.1', port: 22, slots, workdir, env: {} }],
    masterAddr: '127.0.0.1',
  };
}

export function isLocalProfile(p: Pick<Profile, 'name'>): boolean {
  return p.name === LOCAL_PROFILE_NAME;
}

/** Total ranks a profile starts (the world size); spare hosts run none. */
export function profileWorldSize(p: Pick<Profile, 'hosts' | 'scheduler'>): number {
  if (p.scheduler) return p.scheduler.nodes * p.scheduler.tasksPerNode;
  return worldHosts(p).reduce((n, h) => n + h.slots, 0);
}

/** The hosts a run starts ranks on (leader first): every host but the spares. */
export function worldHosts<H extends Pick<ProfileHost, 'spare'>>(p: { hosts: readonly H[] }): H[] {
  return p.hosts.filter((h) => !h.spare);
}

/** A host's agent env: its `env` and COHORT_PYTHON from `python` (an explicit COHORT_PYTHON in env wins); it travels in the LaunchSpec (run-start writes it 0600), never on a command line. */
export function agentEnv(h: Pick<ProfileHost, 'env' | 'python'>): Record<string, string> {
  return h.python ? { COHORT_PYTHON: h.python, ...h.env } : h.env;
}

/** The spare hosts (`spare: true`): they take a lost follower host's ranks on a restart. */
export function spareHosts<H extends Pick<ProfileHost, 'spare'>>(p: { hosts: readonly H[] }): H[] {
  return p.hosts.filter((h) => h.spare);
}

/**
 * Spares: never the first host (the leader holds the run's record and rendezvous), never every host,
 * and enough slots for any follower's ranks (a spare takes all of one lost host's ranks).
 */
function checkSpares(profile: string, hosts: readonly ProfileHost[]): void {
  const at = (i: number, h: ProfileHost, problem: string): never => {
    throw new ProfileError(profile, `hosts[${i}] (${h.name}).spare`, problem, h.name);
  };
  if (hosts[0]?.spare) at(0, hosts[0], 'the first host is the leader (rank 0, the run\'s record and rendezvous) and cannot be a spare; put a spare host after it');
  const followers = hosts.slice(1).filter((h) => !h.spare);
  const need = Math.max(0, ...followers.map((h) => h.slots));
  hosts.forEach((h, i) => {
    if (!h.spare) return;
    if (!followers.length) at(i, h, 'a spare takes the ranks of a lost follower host, and this profile has none (only the first host runs ranks); remove spare or add a host that runs ranks');
    if (h.slots < need) at(i, h, `a spare takes all the ranks of a lost follower host: it needs slots ≥ ${need} (the largest follower's), has ${h.slots}; raise its slots or remove spare`);
  });
}
