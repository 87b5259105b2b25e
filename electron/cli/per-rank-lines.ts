// `cohort run|attach --per-rank` (issue 21 item 2): one line per rank every step window, its step
// split into phases (mean ms per step), and the window's slowest rank marked with the phase and
// how much slower than its peers' median. The run's persistent straggler warning (slow-rank) is a
// `log` event of its own, printed as every warning is.
import { STEP_PHASES, phasesTotalMs, slowestRank, windowPhases, type StepEvent } from '../../trainer/protocol';

export function perRankLines(e: StepEvent): string[] {
  const rows = e.rankPhases ?? windowPhases(e);
  if (!rows) return [`  per rank: not measured by this trainer (one rank, or an engine without per-rank phases)\n`];
  const host = (rank: number) => e.memory.find((m) => m.rank === rank)?.host ?? '?';
  const slow = slowestRank(e);
  const width = Math.max(...rows.map((r) => `${r.rank}@${host(r.rank)}`.length));
  return rows.map((r) => {
    const who = `${r.rank}@${host(r.rank)}`.padEnd(width);
    const split = STEP_PHASES.map((ph) => `${ph} ${r[`${ph}Ms`].toFixed(0)}`).join(' · ');
    const mark = slow && slow.rank === r.rank && slow.slow ? `  ← slowest: ${slow.phase} ${slow.ratio.toFixed(1)}× its peers' median` : '';
    return `  rank ${who}  step ${phasesTotalMs(r).toFixed(0).padStart(5)} ms  ${split}${mark}\n`;
  });
}
