// The profile editor's form state: strings as typed, converted to a profile object for
// decodeProfile (the same validator core uses), whose errors are mapped back onto form fields.
import { ProfileError, decodeProfile, type Profile } from '../../../electron/common';

export interface HostDraft {
  name: string;
  address: string;
  port: string;
  user: string;
  auth: 'agent' | 'key';
  identityFile: string;
  proxyJump: string;
  slots: string;
  gpus: string;
  workdir: string;
  env: string;
  /** `spare: true` (issue 21 item 5): the host row's Spare checkbox; runs no ranks until a restart needs it. */
  spare?: boolean;
}

/** The Slurm scheduler's fields as typed (issue 16); the profile's first host is then the login node. */
export interface SlurmDraft {
  partition: string;
  nodes: string;
  tasksPerNode: string;
  gpusPerNode: string;
  timeLimit: string;
  account: string;
  /** sbatch options, separated by new lines or spaces (a value may contain spaces: "--comment=a b"). */
  extraArgs: string;
}

export interface ProfileDraft {
  name: string;
  /** 'none': SSH hosts, ranks on each host's slots. 'slurm': one login host, the nodes come from Slurm. */
  scheduler: 'none' | 'slurm';
  hosts: HostDraft[];
  masterAddr: string;
  slurm: SlurmDraft;
  /** Fields not edited here (run defaults, lastProbe) are carried over unchanged. */
  rest: Pick<Profile, 'defaults' | 'lastProbe'>;
}

export function emptyHost(i: number): HostDraft {
  return { name: `host${i + 1}`, address: '', port: '22', user: '', auth: 'agent', identityFile: '', proxyJump: '', slots: '1', gpus: '', workdir: '.cohort', env: '' };
}

export function emptySlurm(): SlurmDraft {
  return { partition: '', nodes: '1', tasksPerNode: '1', gpusPerNode: '', timeLimit: '', account: '', extraArgs: '' };
}

export function emptyDraft(name: string): ProfileDraft {
  return { name, scheduler: 'none', hosts: [emptyHost(0)], masterAddr: '', slurm: emptySlurm(), rest: {} };
}

export function draftFrom(p: Profile): ProfileDraft {
  const s = p.scheduler;
  return {
    name: p.name,
    scheduler: s ? 'slurm' : 'none',
    masterAddr: p.masterAddr ?? '',
    slurm: s
      ? { partition: s.partition ?? '', nodes: String(s.nodes), tasksPerNode: String(s.tasksPerNode), gpusPerNode: s.gpusPerNode === undefined ? '' : String(s.gpusPerNode), timeLimit: s.timeLimit ?? '', account: s.account ?? '', extraArgs: s.extraArgs.join('\n') }
      : emptySlurm(),
    rest: { ...(p.defaults ? { defaults: p.defaults } : {}), ...(p.lastProbe !== undefined ? { lastProbe: p.lastProbe } : {}) },
    hosts: p.hosts.map((h) => ({
      name: h.name,
      address: h.address,
      port: String(h.port),
      user: h.user ?? '',
      auth: h.identityFile ? 'key' : 'agent',
      identityFile: h.identityFile ?? '',
      proxyJump: h.proxyJump ?? '',
      slots: String(h.slots),
      gpus: h.gpus?.join(',') ?? '',
      workdir: h.workdir,
      env: Object.entries(h.env).map(([k, v]) => `${k}=${v}`).join('\n'),
      ...(h.spare ? { spare: true } : {}),
    })),
  };
}

const num = (s: string): number | string => (s.trim() !== '' && Number.isFinite(Number(s)) ? Number(s) : s);

/** The sbatch options typed in the form: one per line, or several on a line before each "-x" / "--name". */
export function splitSbatchArgs(text: string): string[] {
  return text
    .split('\n')
    .flatMap((l) => l.trim().split(/\s+(?=--?[A-Za-z])/))
    .map((a) => a.trim())
    .filter(Boolean);
}

function hostInput(h: HostDraft, slurm: boolean): Record<string, unknown> {
  return {
    name: h.name.trim(),
    address: h.address.trim(),
    port: num(h.port || '22'),
    ...(h.user.trim() ? { user: h.user.trim() } : {}),
    ...(h.auth === 'key' ? { identityFile: h.identityFile.trim() } : {}),
    ...(h.proxyJump.trim() ? { proxyJump: h.proxyJump.trim() } : {}),
    // The login node of a Slurm profile runs no ranks: slots and GPUs come from the scheduler fields.
    ...(slurm ? {} : { slots: num(h.slots || '1') }),
    ...(!slurm && h.gpus.trim() ? { gpus: h.gpus.split(',').map((g) => num(g.trim())) } : {}),
    ...(!slurm && h.spare ? { spare: true } : {}),
    workdir: h.workdir,
    env: Object.fromEntries(
      h.env
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .map((l) => {
          const i = l.indexOf('=');
          return i < 0 ? [l, ''] : [l.slice(0, i), l.slice(i + 1)];
        }),
    ),
  };
}

export function draftToInput(d: ProfileDraft): Record<string, unknown> {
  if (d.scheduler === 'slurm') {
    const s = d.slurm;
    const text = (v: string) => (v.trim() ? v.trim() : undefined);
    return {
      name: d.name.trim(),
      ...d.rest,
      scheduler: {
        kind: 'slurm',
        ...(text(s.partition) ? { partition: text(s.partition) } : {}),
        nodes: num(s.nodes || '1'),
        tasksPerNode: num(s.tasksPerNode || '1'),
        ...(text(s.gpusPerNode) ? { gpusPerNode: num(s.gpusPerNode) } : {}),
        ...(text(s.timeLimit) ? { timeLimit: text(s.timeLimit) } : {}),
        ...(text(s.account) ? { account: text(s.account) } : {}),
        extraArgs: splitSbatchArgs(s.extraArgs),
      },
      hosts: d.hosts.slice(0, 1).map((h) => hostInput(h, true)),
    };
  }
  return {
    name: d.name.trim(),
    ...d.rest,
    ...(d.masterAddr.trim() ? { masterAddr: d.masterAddr.trim() } : {}),
    hosts: d.hosts.map((h) => hostInput(h, false)),
  };
}

export interface DraftCheck {
  profile: Profile | null;
  /** Form field key ('name', 'masterAddr', 'h0.port', ...) → message: every wrong field, each under its own key. */
  errors: Record<string, string>;
  /** The first error in full (profile and field named), for a summary line. */
  message: string | null;
}

/** The form field a ProfileError's path names: `hosts[1] (h.2).port` → 'h1.port', `hosts[0]` → 'h0.name'. */
export function fieldKey(path: string): string {
  // `scheduler.extraArgs[2]` → 'scheduler.extraArgs'; `scheduler` (not an object) → 'scheduler.kind'.
  const sched = /^scheduler(?:\.(\w+))?/.exec(path);
  if (sched) return `scheduler.${sched[1] ?? 'kind'}`;
  const host = /^hosts\[(\d+)\]/.exec(path);
  if (!host) return path.split('.')[0] || 'name';
  // The host's name sits in the path between parentheses and may itself contain dots: take the last segment.
  const field = /\.(\w+)(?:\[\d+\])?$/.exec(path.slice(host[0].length));
  return `h${host[1]}.${field?.[1] ?? 'name'}`;
}

/** Replaces a field found wrong with a valid stand-in, so decoding again reaches the next error. False if it cannot. */
function standIn(input: Record<string, unknown>, key: string): boolean {
  if (key === 'name') return (input.name = 'draft'), true;
  if (key === 'masterAddr' || key === 'masterPort' || key === 'defaults') return delete input[key];
  const sm = /^scheduler\.(\w+)$/.exec(key);
  if (sm) {
    const sched = input.scheduler as Record<string, unknown> | undefined;
    if (!sched || sm[1] === 'kind') return false;
    const good: Record<string, unknown> = { nodes: 1, tasksPerNode: 1, extraArgs: [] };
    if (sm[1]! in good) sched[sm[1]!] = good[sm[1]!];
    else if (sm[1]! in sched) delete sched[sm[1]!];
    else return false;
    return true;
  }
  const m = /^h(\d+)\.(\w+)$/.exec(key);
  const host = m ? (input.hosts as Record<string, unknown>[] | undefined)?.[Number(m[1])] : undefined;
  if (!m || !host) return false;
  const good: Record<string, unknown> = { name: `draft-host-${m[1]}`, address: 'draft.invalid', port: 22, slots: 1, workdir: '.cohort', env: {} };
  if (m[2]! in good) host[m[2]!] = good[m[2]!];
  else if (m[2]! in host) delete host[m[2]!];
  else return false;
  return true;
}

/**
 * Validates the form with decodeProfile (the validator core uses). It stops at the first error, so
 * each field found wrong is replaced by a valid stand-in and the decode repeated: every wrong field
 * gets its own message.
 */
export function checkDraft(d: ProfileDraft): DraftCheck {
  const input = draftToInput(d);
  let first: unknown;
  try {
    return { profile: decodeProfile(input), errors: {}, message: null };
  } catch (err) {
    first = err;
  }
  if (!(first instanceof ProfileError)) return { profile: null, errors: {}, message: String(first) };
  const errors: Record<string, string> = {};
  const work = structuredClone(input);
  let err: unknown = first;
  for (let n = 0; n < 64 && err instanceof ProfileError; n++) {
    const key = fieldKey(err.field);
    if (key in errors || !standIn(work, key)) {
      errors[key] ??= err.problem;
      break;
    }
    errors[key] = err.problem;
    try {
      decodeProfile(work);
      err = undefined;
    } catch (e) {
      err = e;
    }
  }
  return { profile: null, errors, message: first.message };
}
