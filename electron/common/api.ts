// The Api contract: everything the dashboard (and any other client) can ask of core. Defined once
// here and implemented once in core (electron/core/service); Electron IPC (preload + main) and
// `cohort serve` (WebSocket) are two transports of the same contract. Two verbs, as VS Code's IPC:
// methods return Promises, `onXxx` subscriptions return a disposer.
import { CohortError, toErrorInfo, type CheckResult, type CohortEvent, type ErrorInfo, type RunStatus, type TrainConfig } from '../../trainer/protocol';
import { decodeProfile, type Profile, type ProfileHost } from './profile';
import type { RunError } from './run-error';
import type { RunSystemSummary } from './run-system';
import { decodeRunUserFields, type RunSeries, type RunUserFields, type ThroughputSpread } from './run-history';
import { DecodeError, arr, obj, optBool, optNum, optStr, str, strArr, type Obj } from '../../trainer/protocol/validate';
import type { ConnectionResult, DeployProgress, DeployResult, HostKeyInfo, HostProbe } from './host-info';
import type { DeletedRun, RemoveRunsOptions } from './run-removal';

// ---- shapes that cross the boundary --------------------------------------------------------

// What hosts report (probe, deploy, host keys, connection tests) lives in host-info.ts.
export type { ConnectionResult, DeployProgress, DeployResult, GpuInfo, HostKeyInfo, HostProbe, SlurmProbe } from './host-info';

/** How every failure crosses the Api: {name, code, message, hint} (trainer/protocol/errors.ts). */
export type ApiErrorInfo = ErrorInfo;

/** Where one host keeps a durable run's record: its workdir and the trainer bundle's entry there. */
export interface HostRecordRef {
  host: string;
  workdir: string;
  entry: string;
}

/** A run's state as the local history knows it (a cache of the hosts' record; `lost`: no host of
 *  the run answered for a long time, see `lastSeenAt`). */
export type RunMetaStatus = RunStatus | 'queued' | 'starting' | 'running' | 'restarting' | 'lost';

/** The run history record (meta.json of a run). */
export interface RunMeta extends RunUserFields {
  id: string;
  profile: string;
  startedAt: string;
  endedAt?: string;
  status: RunMetaStatus;
  /** Where each host keeps the run's record (attach and stop from any client go there). */
  record?: HostRecordRef[];
  /**
   * Where the profile's spare hosts (`spare: true`, issue 21 item 5) keep the run's record once one
   * takes a lost host's ranks. The `restart` that names a replacement moves that spare into `record`
   * and `hosts` in place of the excluded host (attach, stop and `runs show` then reach the spare).
   */
  spareRecord?: HostRecordRef[];
  /** When a host of the run last answered (ISO time); set with status `lost`. */
  lastSeenAt?: string;
  /**
   * Hosts a stop of this run was sent to that never confirmed it (down then, issue 24 item 4): the
   * stop is owed to them. Listing the runs (`cohort runs list`, History) sends it again (run-stop: the
   * host's stop marker, so its own run-rejoin refuses the run) and drops each host that confirms.
   */
  stopOwed?: string[];
  config: TrainConfig;
  /** `replaces`: a spare host that took these ranks from that (lost, excluded) host in a restart. */
  hosts: { name: string; address?: string; ranks: number[]; replaces?: string }[];
  worldSize: number;
  versions: Record<string, string>;
  /** The trainer's median over the run's windows; for a cancelled or failed run, the median of the windows it measured. */
  medianGlobalSamplesPerSec?: number | null;
  /** The spread over every measured window (runs recorded before it existed get it on first read). */
  throughput?: ThroughputSpread;
  /** What its hosts did meanwhile: per host, medians over the windows of CPU, load, network, GPU (run-system.ts). */
  system?: RunSystemSummary;
  /** The last step reported (a cancelled or failed run: how far it got). */
  steps?: number;
  /** Restarts told in the run's record (the run view's count, trainer/protocol/run-view.ts). */
  restarts?: number;
  /**
   * Why the run failed or was lost: the one error shape (ErrorFields: code, message, hint, host,
   * rank; run-error.ts). Before session 8 a string (RunStore reads those records in this shape).
   */
  error?: RunError;
  /** Deprecated: error.code, still written beside it for scripts that read `errorCode` (e.g. ssh-auth for a launch a host refused). */
  errorCode?: string;
  /** The process that started the run (informational: stopping goes through the hosts, never a signal to it). */
  controllerPid?: number;
  profileSnapshot?: unknown;
  /** What ran, from the run's own hello/plan/compile events (config is what was asked for). */
  applied?: AppliedConfig;
  /**
   * Hosts (a spare in their place: `replacement`) or Slurm nodes (sbatch --exclude) left out before
   * the first step, and why: `cohort run --check` found errors on them (issue 21 item 5, check-spares.ts).
   */
  excluded?: { host: string; reason: string; replacement?: string }[];
  /** The `cohort check` prediction this run was started under (its own --check, or the profile's last check of the same plan); absent: none. */
  check?: RunCheckPrediction;
}

/** A check's prediction as a run records it (issue 21 item 3): compared with the achieved figures in Live, History and Compare. */
export interface RunCheckPrediction {
  /** When the check ran (ISO time): the figures say "check of <time>". */
  checkedAt: string;
  /** One rank's rate the check measured or took from History (batch ÷ its compute time). */
  oneRankSamplesPerSec: number;
  /** Predicted scaling efficiency and step time for this world size. */
  scaling: number;
  stepMs: number;
  worldSize: number;
}

/** The configuration a run really had, next to RunMeta.config (what was asked). */
export interface AppliedConfig {
  engine?: string;
  backend?: string;
  /** Rank 0's device, as the engine checked it at run time. */
  device?: string;
  /** Every distinct device the ranks really used (from the plan event). */
  devices?: string[];
  /** A rank asked for a GPU and runs on the CPU. */
  gpuFellBack?: boolean;
  fp16Compute?: boolean;
  bf16Compute?: boolean;
  fp16Transport?: boolean;
  /** 'on' (the compiled/tuned step runs), 'defaults kept' (tuned plan was slower), 'failed', 'skipped', 'not run', 'off'. */
  compile?: string;
  /** Environment switches that change the run (COHORT_TORCH_EXTRAS, TF_*, CUDA_*, NCCL_*, …), as the hosts had them. */
  envSwitches?: Record<string, string>;
  /** envSwitches come from the hosts' agents (`env` events), not from the client's profile env. */
  envFromHosts?: boolean;
}

export type RunExportFormat = 'csv' | 'json';

/** What a launch asks for; name, tags and notes are recorded with the run (user.json). */
export interface StartRunRequest extends RunUserFields {
  profile: string;
  /** For the `local` profile: how many ranks (default 1). Cluster profiles use their slots. */
  ranks?: number;
  config: Partial<TrainConfig>;
  acceptNewHostKeys?: boolean;
  /** Restarts from the last checkpoint after a rank or host failure (default 0). */
  maxRestarts?: number;
  /** Busy GPU slots: wait behind the run holding them (true, default) or fail at once (false). */
  queue?: boolean;
  /**
   * Follower hosts of the profile to leave out, each replaced by one of its spare hosts; on a Slurm
   * profile, nodes of the partition to leave out (sbatch --exclude) (issue 21 item 5: `cohort run
   * --check` when the check found errors only on these; check-spares.ts).
   */
  exclude?: string[];
  /**
   * Refused before any host runs it (`cohort run --check` found errors no spare can absorb): the
   * launch is recorded in the history as failed with this error, and startRun rejects with it,
   * carrying the run id, as for a host that refused the connection. A script always gets a run id
   * and `cohort runs show` says why (issue 22: every `run --json` stream leads with its runId).
   */
  refused?: ErrorInfo;
}

export interface RunEventMessage {
  runId: string;
  /** The event's index in the run's record (events.jsonl): a client that attached with
   *  `attachRun` keeps the messages with seq >= its `nextSeq`, so it sees no event twice and
   *  misses none. */
  seq: number;
  event: CohortEvent;
}

/** What `attachRun` hands back: the run's record so far, and where live messages continue. */
export interface RunAttachment {
  meta: RunMeta;
  events: CohortEvent[];
  /** The seq of the next live RunEventMessage of this run. */
  nextSeq: number;
  /** True while the run is still going (live messages follow through onRunEvent). */
  live: boolean;
}

/** Core asking the user for an encrypted key's passphrase (issue 14 item 5). Sent with open: true
 *  when asked, and again with open: false once answered (by any client), cancelled or timed out. */
export interface PassphraseRequestMessage {
  id: string;
  host: string;
  keyPath: string;
  /** 1 for the first request, 2+ after a wrong passphrase. */
  attempt: number;
  open: boolean;
}

export interface StopRunOptions {
  /** Skip the grace period (a second Ctrl-C): close every host's channel at once. */
  force?: boolean;
}

/** A saved profile by name, or a profile as a form holds it right now (unsaved: validated and used
 *  for that one call, never stored). */
export type ProfileRef = string | Profile;

export interface CohortApi {
  listProfiles(): Promise<Profile[]>;
  /** Creates or replaces a profile; `previousName` renames. Returns the stored profile. */
  saveProfile(profile: unknown, previousName?: string): Promise<Profile>;
  deleteProfile(name: string): Promise<void>;
  importSshConfig(): Promise<{ hosts: ProfileHost[]; skipped: { what: string; reason: string }[] }>;
  /** Connects to one host of a saved profile or of an unsaved form's profile (a fresh connection
   *  each time, so it tests exactly these values) and runs `true` there. */
  testConnection(profile: ProfileRef, host: string): Promise<ConnectionResult>;
  /** Records a host key the user confirmed (the fingerprint must match what the host presents). */
  trustHostKey(key: HostKeyInfo): Promise<void>;
  probe(profile: string): Promise<HostProbe[]>;
  deploy(profile: string): Promise<DeployResult[]>;
  /** `cohort check` for the planned run (profile defaults under `config`); `ranks`: the `local` profile's ranks, as in startRun (default 1). */
  checkProfile(profile: string, config?: Partial<TrainConfig>, ranks?: number): Promise<CheckResult>;
  lastCheck(profile: string): Promise<CheckResult | null>; // the profile's last check on this machine, or null
  startRun(req: StartRunRequest): Promise<{ runId: string }>;
  /** Stops the run on every host, whichever client started it; resolves when it has ended. */
  stopRun(runId: string, opts?: StopRunOptions): Promise<void>;
  /** The run's record so far plus where its live events continue: subscribe with onRunEvent
   *  first, then attach, and keep messages with seq >= nextSeq (a reload or a second client);
   *  `followRun` does exactly that. */
  attachRun(runId: string): Promise<RunAttachment>;
  listRuns(): Promise<RunMeta[]>;
  getRun(runId: string): Promise<{ meta: RunMeta; events: CohortEvent[] }>;
  /** Answers an open passphrase request: the passphrase, or null to cancel. The passphrase is used
   *  to decrypt the key in memory, never stored or logged. */
  answerPassphrase(id: string, passphrase: string | null): Promise<void>;
  /** Names a run ('' clears the name); returns the run as the history now has it. */
  renameRun(runId: string, name: string): Promise<RunMeta>;
  /** Deletes runs from the local history (`cohort runs rm`); the hosts' records stay. Refused, deleting
   *  none, when one may still be running. Returns the ids deleted. */
  deleteRuns(runIds: string[]): Promise<string[]>;
  /** deleteRuns with the hosts' records too when asked (`cohort runs rm --hosts [--yes]`, run-removal.ts):
   *  one answer per host, and per run whether its local record went (refused as deleteRuns while one may run). */
  removeRuns(runIds: string[], opts?: RemoveRunsOptions): Promise<DeletedRun[]>;
  /** Each run's curves (throughput, loss, step time per window), bounded, for Compare. */
  getRunSeries(runIds: string[]): Promise<RunSeries[]>;
  /** The runs as CSV (one row per run) or JSON, cancelled and failed runs with what they measured;
   *  speedups against `baseline` (default: the first run). */
  exportRuns(runIds: string[], format: RunExportFormat, baseline?: string): Promise<string>;
  /** One run's live events (messages of other runs never reach this listener, nor the client). */
  onRunEvent(runId: string, listener: (m: RunEventMessage) => void): () => void;
  /** Connect and deploy progress per host, of an explicit deploy and of a launch being prepared (`launch`). */
  onDeployProgress(listener: (p: DeployProgress) => void): () => void;
  onPassphraseRequest(listener: (r: PassphraseRequestMessage) => void): () => void;
}

export type ApiMethod = Exclude<keyof CohortApi, `on${string}`>;
export type ApiEvent = Extract<keyof CohortApi, `on${string}`>;

/** The arguments an onXxx subscription takes before its listener (onRunEvent: [runId]). */
export type ApiEventArgs<E extends ApiEvent> = Parameters<CohortApi[E]> extends [...infer A, unknown] ? A : never;

/**
 * Decoders of each subscription's arguments (the listener excluded), as API_ARGS for methods: a
 * transport validates what a client asks to listen to before core sees it. The keys are the Api's
 * push events (a missing onXxx fails the compiler).
 */
export const API_EVENT_ARGS: { [E in ApiEvent]: (args: unknown[]) => ApiEventArgs<E> } = {
  onRunEvent: (a) => [name(a[0], 'runId')],
  onDeployProgress: () => [],
  onPassphraseRequest: () => [],
};
export const API_EVENTS = Object.keys(API_EVENT_ARGS) as ApiEvent[];

export function isApiEvent(e: unknown): e is ApiEvent {
  return typeof e === 'string' && (API_EVENTS as string[]).includes(e);
}

/**
 * Follows one run the one way every client does: subscribes to its events first, then attaches,
 * and hands `onEvent` each event once in record order — the record so far, then the live ones
 * (seq >= nextSeq); none twice, none missed. `dispose` unsubscribes.
 */
export async function followRun(api: Pick<CohortApi, 'onRunEvent' | 'attachRun'>, runId: string, onEvent: (e: CohortEvent) => void): Promise<{ attachment: RunAttachment; dispose: () => void }> {
  let nextSeq = -1;
  const early: RunEventMessage[] = [];
  const take = (m: RunEventMessage) => {
    // seq -1: a message outside the record (the client's own disk-full warning): no place in the
    // order, never a duplicate; it is handed on as it comes (issue 24 defect 13: it was dropped).
    if (m.seq < 0) return onEvent(m.event);
    if (m.seq < nextSeq) return;
    nextSeq = m.seq + 1;
    onEvent(m.event);
  };
  const off = api.onRunEvent(runId, (m) => (nextSeq < 0 ? early.push(m) : take(m)));
  try {
    const attachment = await api.attachRun(runId);
    for (const e of attachment.events) onEvent(e);
    nextSeq = attachment.nextSeq;
    for (const m of early.splice(0)) take(m);
    return { attachment, dispose: off };
  } catch (err) {
    off();
    throw err;
  }
}

// ---- argument validation (every transport validates before calling core) --------------------

const name = (v: unknown, p: string) => {
  if (typeof v !== 'string' || !v.trim()) throw new DecodeError(p, 'expected a non-empty string');
  return v;
};

/** Decoders for each method's argument list; they throw DecodeError naming the argument. */
export const API_ARGS: { [M in ApiMethod]: (args: unknown[]) => Parameters<CohortApi[M]> } = {
  listProfiles: () => [],
  saveProfile: (a) => [a[0], a[1] === undefined ? undefined : name(a[1], 'previousName')],
  deleteProfile: (a) => [name(a[0], 'name')],
  importSshConfig: () => [],
  testConnection: (a) => [typeof a[0] === 'string' ? name(a[0], 'profile') : decodeProfile(a[0]), name(a[1], 'host')],
  trustHostKey: (a) => {
    const o = obj(a[0], 'key');
    return [
      {
        host: str(o, 'host', 'key', { nonEmpty: true }),
        address: str(o, 'address', 'key', { nonEmpty: true }),
        port: optNum(o, 'port', 'key', { int: true, min: 1, max: 65535 }) ?? 22,
        keyType: str(o, 'keyType', 'key'),
        fingerprint: str(o, 'fingerprint', 'key', { nonEmpty: true }),
        ...(optStr(o, 'knownFingerprint', 'key') ? { knownFingerprint: optStr(o, 'knownFingerprint', 'key')! } : {}),
      },
    ];
  },
  probe: (a) => [name(a[0], 'profile')],
  deploy: (a) => [name(a[0], 'profile')],
  checkProfile: (a) => {
    const ranks = optNum({ ranks: a[2] }, 'ranks', 'checkProfile', { int: true, min: 1, max: 64 });
    const config = a[1] === undefined ? undefined : (obj(a[1], 'config') as Partial<TrainConfig>);
    return ranks !== undefined ? [name(a[0], 'profile'), config, ranks] : config ? [name(a[0], 'profile'), config] : [name(a[0], 'profile')];
  },
  lastCheck: (a) => [name(a[0], 'profile')],
  startRun: (a) => {
    const o: Obj = obj(a[0], 'request');
    const ranks = optNum(o, 'ranks', 'request', { int: true, min: 1, max: 64 });
    const accept = optBool(o, 'acceptNewHostKeys', 'request');
    const maxRestarts = optNum(o, 'maxRestarts', 'request', { int: true, min: 0, max: 100 });
    const queue = optBool(o, 'queue', 'request');
    const exclude = o.exclude === undefined ? undefined : strArr(o, 'exclude', 'request');
    const refused = o.refused === undefined ? undefined : obj(o.refused, 'request.refused');
    return [
      {
        profile: str(o, 'profile', 'request', { nonEmpty: true }),
        config: obj(o.config ?? {}, 'request.config') as Partial<TrainConfig>,
        ...(ranks === undefined ? {} : { ranks }),
        ...(accept === undefined ? {} : { acceptNewHostKeys: accept }),
        ...(maxRestarts === undefined ? {} : { maxRestarts }),
        ...(queue === undefined ? {} : { queue }),
        ...(exclude?.length ? { exclude } : {}),
        ...(refused ? { refused: { code: str(refused, 'code', 'request.refused', { nonEmpty: true }), message: str(refused, 'message', 'request.refused', { nonEmpty: true }), ...(typeof refused.hint === 'string' ? { hint: refused.hint } : {}), ...(typeof refused.host === 'string' ? { host: refused.host } : {}) } } : {}),
        ...decodeRunUserFields(o, 'request'),
      },
    ];
  },
  stopRun: (a) => {
    if (a[1] === undefined) return [name(a[0], 'runId')];
    const force = optBool(obj(a[1], 'options'), 'force', 'options');
    return [name(a[0], 'runId'), force === undefined ? {} : { force }];
  },
  attachRun: (a) => [name(a[0], 'runId')],
  listRuns: () => [],
  getRun: (a) => [name(a[0], 'runId')],
  answerPassphrase: (a) => {
    // The value is never echoed into an error message.
    if (a[1] !== null && (typeof a[1] !== 'string' || a[1].length > 4096)) throw new DecodeError('passphrase', 'expected a string of at most 4096 characters, or null to cancel');
    return [name(a[0], 'id'), a[1]];
  },
  renameRun: (a) => {
    if (typeof a[1] !== 'string') throw new DecodeError('name', "expected a string ('' clears the name)");
    return [name(a[0], 'runId'), a[1]];
  },
  deleteRuns: (a) => [arr({ ids: a[0] }, 'ids', 'runIds', (v, p) => name(v, p))],
  removeRuns: (a) => {
    const ids = arr({ ids: a[0] }, 'ids', 'runIds', (v, p) => name(v, p));
    if (a[1] === undefined) return [ids];
    const o = obj(a[1], 'options');
    const [hosts, anyway] = [optBool(o, 'hosts', 'options'), optBool(o, 'anyway', 'options')];
    return [ids, { ...(hosts === undefined ? {} : { hosts }), ...(anyway === undefined ? {} : { anyway }) }];
  },
  getRunSeries: (a) => [arr({ ids: a[0] }, 'ids', 'runIds', (v, p) => name(v, p))],
  exportRuns: (a) => {
    if (a[1] !== 'csv' && a[1] !== 'json') throw new DecodeError('format', `expected "csv" or "json", got ${JSON.stringify(a[1])}`);
    return [arr({ ids: a[0] }, 'ids', 'runIds', (v, p) => name(v, p)), a[1], a[2] === undefined ? undefined : name(a[2], 'baseline')];
  },
};

export const API_METHODS = Object.keys(API_ARGS) as ApiMethod[];

export function isApiMethod(m: unknown): m is ApiMethod {
  return typeof m === 'string' && (API_METHODS as string[]).includes(m);
}

/** Errors cross transports as plain data (VS Code's {name, message} idea, plus our code and hint). */
export function toApiError(err: unknown): ApiErrorInfo {
  return toErrorInfo(err);
}

/** A failure that came back over the Api: code, message and hint as core sent them. */
export class ApiCallError extends CohortError {
  /** The class of the error on the side that threw it (SshError, ProfileError, ...), if it said. */
  readonly remoteName: string | undefined;
  /** The host and the run it concerns, when core said (toErrorInfo keeps them across the wire). */
  readonly host: string | undefined;
  readonly runId: string | undefined;
  constructor(info: ApiErrorInfo) {
    super(info.code, info.message, info.hint ? { hint: info.hint } : {});
    this.name = 'ApiCallError';
    this.remoteName = info.name;
    this.host = info.host;
    this.runId = info.runId;
  }
}


