// The Api contract: everything the dashboard (and any other client) can ask of core. Defined once
// here and implemented once in core (electron/core/service); Electron IPC (preload + main) and
// `cohort serve` (WebSocket) are two transports of the same contract. Two verbs, as VS Code's IPC:
// methods return Promises, `onXxx` subscriptions return a disposer.
import type { CohortEvent, RunStatus, TrainConfig } from '../../trainer/protocol';
import type { Profile, ProfileHost } from './profile';
import { DecodeError, arr, obj, optBool, optNum, optStr, str, type Obj } from '../../trainer/protocol/validate';

// ---- shapes that cross the boundary --------------------------------------------------------

export interface GpuInfo {
  index: number;
  name: string;
  memoryBytes: number;
  driver: string;
  cuda: string;
}

/** What `probe` found on one host. */
export interface HostProbe {
  host: string;
  ok: boolean;
  error?: ApiErrorInfo;
  probedAt: string;
  os?: string;
  arch?: string;
  cores?: number;
  memBytes?: number;
  /** Node on the host's PATH (the trainer needs ≥ 20). */
  node?: { version: string; path: string; ok: boolean };
  gpus: GpuInfo[];
  tfjsNodeGpu: boolean;
  tfjsNode: boolean;
  python?: { path: string; version: string };
  torch?: { version: string; cuda: boolean };
}

export interface DeployProgress {
  host: string;
  phase: 'check' | 'upload' | 'verify' | 'cached' | 'done' | 'failed';
  bytes: number;
  totalBytes: number;
  message?: string;
}

export interface DeployResult {
  host: string;
  ok: boolean;
  /** True when the bundle was already on the host (nothing transferred). */
  cached: boolean;
  bytesSent: number;
  remoteDir: string;
  error?: ApiErrorInfo;
}

export interface HostKeyInfo {
  host: string;
  address: string;
  port: number;
  keyType: string;
  /** OpenSSH style: SHA256:base64. */
  fingerprint: string;
  /** Set when the key differs from the recorded one (never trusted automatically). */
  knownFingerprint?: string;
}

export type ConnectionResult = { ok: true; host: string; latencyMs: number } | { ok: false; host: string; error: ApiErrorInfo; hostKey?: HostKeyInfo };

export interface ApiErrorInfo {
  code: string;
  message: string;
  hint?: string;
}

/** The run history record (meta.json of a run). */
export interface RunMeta {
  id: string;
  profile: string;
  startedAt: string;
  endedAt?: string;
  status: RunStatus | 'running';
  config: TrainConfig;
  hosts: { name: string; address?: string; ranks: number[] }[];
  worldSize: number;
  versions: Record<string, string>;
  medianGlobalSamplesPerSec?: number | null;
  steps?: number;
  error?: string;
  /** The process running the controller (for `cohort stop`). */
  controllerPid?: number;
  profileSnapshot?: unknown;
}

export interface StartRunRequest {
  profile: string;
  /** For the `local` profile: how many ranks (default 1). Cluster profiles use their slots. */
  ranks?: number;
  config: Partial<TrainConfig>;
  acceptNewHostKeys?: boolean;
}

export interface RunEventMessage {
  runId: string;
  event: CohortEvent;
}

export interface CohortApi {
  listProfiles(): Promise<Profile[]>;
  /** Creates or replaces a profile; `previousName` renames. Returns the stored profile. */
  saveProfile(profile: unknown, previousName?: string): Promise<Profile>;
  deleteProfile(name: string): Promise<void>;
  importSshConfig(): Promise<{ hosts: ProfileHost[]; skipped: { what: string; reason: string }[] }>;
  testConnection(profile: string, host: string): Promise<ConnectionResult>;
  /** Records a host key the user confirmed (the fingerprint must match what the host presents). */
  trustHostKey(key: HostKeyInfo): Promise<void>;
  probe(profile: string): Promise<HostProbe[]>;
  deploy(profile: string): Promise<DeployResult[]>;
  startRun(req: StartRunRequest): Promise<{ runId: string }>;
  stopRun(runId: string): Promise<void>;
  listRuns(): Promise<RunMeta[]>;
  getRun(runId: string): Promise<{ meta: RunMeta; events: CohortEvent[] }>;
  exportRunsCsv(runIds: string[]): Promise<string>;
  onRunEvent(listener: (m: RunEventMessage) => void): () => void;
  onDeployProgress(listener: (p: DeployProgress) => void): () => void;
}

export type ApiMethod = Exclude<keyof CohortApi, `on${string}`>;
export type ApiEvent = Extract<keyof CohortApi, `on${string}`>;

export const API_EVENTS = ['onRunEvent', 'onDeployProgress'] as const satisfies readonly ApiEvent[];

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
  testConnection: (a) => [name(a[0], 'profile'), name(a[1], 'host')],
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
  startRun: (a) => {
    const o: Obj = obj(a[0], 'request');
    const ranks = optNum(o, 'ranks', 'request', { int: true, min: 1, max: 64 });
    const accept = optBool(o, 'acceptNewHostKeys', 'request');
    return [
      {
        profile: str(o, 'profile', 'request', { nonEmpty: true }),
        config: obj(o.config ?? {}, 'request.config') as Partial<TrainConfig>,
        ...(ranks === undefined ? {} : { ranks }),
        ...(accept === undefined ? {} : { acceptNewHostKeys: accept }),
      },
    ];
  },
  stopRun: (a) => [name(a[0], 'runId')],
  listRuns: () => [],
  getRun: (a) => [name(a[0], 'runId')],
  exportRunsCsv: (a) => [arr({ ids: a[0] }, 'ids', 'runIds', (v, p) => name(v, p))],
};

export const API_METHODS = Object.keys(API_ARGS) as ApiMethod[];

export function isApiMethod(m: unknown): m is ApiMethod {
  return typeof m === 'string' && (API_METHODS as string[]).includes(m);
}

/** Errors cross transports as plain data (VS Code's {name, message} idea, plus our code and hint). */
export function toApiError(err: unknown): ApiErrorInfo {
  const e = err as { code?: unknown; message?: unknown; hint?: unknown };
  return {
    code: typeof e?.code === 'string' ? e.code : err instanceof DecodeError ? 'bad-argument' : 'error',
    message: typeof e?.message === 'string' ? e.message : String(err),
    ...(typeof e?.hint === 'string' ? { hint: e.hint } : {}),
  };
}

export class ApiCallError extends Error {
  readonly code: string;
  readonly hint?: string;
  constructor(info: ApiErrorInfo) {
    super(info.message);
    this.name = 'ApiCallError';
    this.code = info.code;
    if (info.hint) this.hint = info.hint;
  }
}


