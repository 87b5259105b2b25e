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
}

export interface ProfileDraft {
  name: string;
  hosts: HostDraft[];
  masterAddr: string;
  /** Fields not edited here (defaults, lastProbe) are carried over unchanged. */
  rest: Pick<Profile, 'defaults' | 'lastProbe'>;
}

export function emptyHost(i: number): HostDraft {
  return { name: `host${i + 1}`, address: '', port: '22', user: '', auth: 'agent', identityFile: '', proxyJump: '', slots: '1', gpus: '', workdir: '.cohort', env: '' };
}

export function draftFrom(p: Profile): ProfileDraft {
  return {
    name: p.name,
    masterAddr: p.masterAddr ?? '',
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
    })),
  };
}

const num = (s: string): number | string => (s.trim() !== '' && Number.isFinite(Number(s)) ? Number(s) : s);

export function draftToInput(d: ProfileDraft): Record<string, unknown> {
  return {
    name: d.name.trim(),
    ...d.rest,
    ...(d.masterAddr.trim() ? { masterAddr: d.masterAddr.trim() } : {}),
    hosts: d.hosts.map((h) => ({
      name: h.name.trim(),
      address: h.address.trim(),
      port: num(h.port || '22'),
      ...(h.user.trim() ? { user: h.user.trim() } : {}),
      ...(h.auth === 'key' ? { identityFile: h.identityFile.trim() } : {}),
      ...(h.proxyJump.trim() ? { proxyJump: h.proxyJump.trim() } : {}),
      slots: num(h.slots || '1'),
      ...(h.gpus.trim() ? { gpus: h.gpus.split(',').map((g) => num(g.trim())) } : {}),
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
    })),
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
