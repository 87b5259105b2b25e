// What ran, in words, for every view of a run (History, `cohort runs list|show`): compile and the
// half-precision modes as the run applied them (RunMeta.applied, from its own events), never as
// they were asked (RunMeta.config). A run that ended before it said (no hello) shows "asked, not
// reported". One place, so GUI and CLI cannot disagree.
import type { RunMeta } from './api';

/** 'no' (not asked), else what the run did: 'on', 'defaults kept', 'failed', 'skipped', 'not run', or 'asked, not reported'. */
export function compileLabel(r: Pick<RunMeta, 'config' | 'applied'>): string {
  return r.config.compile ? (r.applied?.compile ?? 'asked, not reported') : 'no';
}

/** 'no' (not asked), else 'compute + exchange', 'exchange only', 'asked, not applied' or 'asked, not reported'. */
export function fp16Label(r: Pick<RunMeta, 'config' | 'applied'>): string {
  if (!r.config.fp16) return 'no';
  const a = r.applied;
  if (a?.fp16Compute === undefined) return 'asked, not reported';
  return a.fp16Compute ? 'compute + exchange' : a.fp16Transport ? 'exchange only' : 'asked, not applied';
}

/** 'no' (not asked), else 'on', 'asked, not applied' or 'asked, not reported'. */
export function bf16Label(r: Pick<RunMeta, 'config' | 'applied'>): string {
  if (!r.config.bf16) return 'no';
  const b = r.applied?.bf16Compute;
  return b === undefined ? 'asked, not reported' : b ? 'on' : 'asked, not applied';
}

/** The compact form for one-line lists: `compile fp16` when they ran as asked, `fp16:exchange-only`, `compile:failed`... */
export function appliedTokens(r: Pick<RunMeta, 'config' | 'applied'>): string[] {
  const token = (name: string, label: string, full: string) => (label === 'no' ? [] : [label === full ? name : `${name}:${label.replace(/, /g, '-').replace(/ \+ /g, '+').replace(/ /g, '-')}`]);
  return [...token('compile', compileLabel(r), 'on'), ...token('fp16', fp16Label(r), 'compute + exchange'), ...token('bf16', bf16Label(r), 'on')];
}
