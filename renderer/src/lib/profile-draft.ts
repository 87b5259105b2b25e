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
  /** Fields not edited here (defaults, lastProbe, a Slurm scheduler: no form for it yet) are carried over unchanged. */
  rest: Pick<Profile, 'defaults' | 'lastProbe' | 'scheduler'>;
}

export function emptyHost(i: number): HostDraft {
  return { name: `host${i + 1}`, address: '', port: '22', user: '', auth: 'agent', identityFile: '', proxyJump: '', slots: '1', gpus: '', workdir: '.cohort', env: '' };
}

export function draftFrom(p: Profile): ProfileDraft {
  return {
    name: p.name,
    masterAddr: p.masterAddr ?? '',
    rest: { ...(p.defaults ? { defaults: p.defaults } : {}), ...(p.lastProbe !== undefined ? { lastProbe: p.lastProbe } : {}), ...(p.scheduler ? { scheduler: p.scheduler } : {}) },
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
  /** Form field key ('name', 'h0.port', ...) → message. */
  errors: Record<string, string>;
  message: string | null;
}

export function checkDraft(d: ProfileDraft): DraftCheck {
  try {
    return { profile: decodeProfile(draftToInput(d)), errors: {}, message: null };
  } catch (err) {
    if (!(err instanceof ProfileError)) return { profile: null, errors: {}, message: String(err) };
    const m = /^hosts\[(\d+)\][^.]*(?:\.(\w+))?/.exec(err.field);
    const key = m ? `h${m[1]}.${m[2] ?? 'name'}` : err.field || 'name';
    return { profile: null, errors: { [key]: err.problem }, message: err.message };
  }
}
