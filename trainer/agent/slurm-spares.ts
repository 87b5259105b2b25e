// The partition's spare nodes at a Slurm check (issue 21 item 5, bad node out): the nodes besides
// the check's allocation that a run of the same placement could be given, so that `cohort run
// --check` can leave a node with errors out (sbatch --exclude) only when enough others are left.
// Usable: up and responding (sinfo's compact state idle, mix, alloc, comp or plnd, with no `*`),
// not drained, down, failed or reserved; in the run's partition (--partition, else the default
// one); not left out by the profile's own --exclude. Undefined when unknown (sinfo failed, or the
// profile pins its nodes with --nodelist: nothing can take a node's place).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { splitExcludeArgs } from '../protocol';
import { hostnamesOf } from './slurm-exclude';

const execFileP = promisify(execFile);
const USABLE = new Set(['idle', 'mix', 'alloc', 'comp', 'plnd']);

export async function spareNodes(srunArgs: readonly string[], allocated: readonly string[]): Promise<string[] | undefined> {
  const { exclude, pinsNodes } = splitExcludeArgs(srunArgs);
  if (pinsNodes) return undefined;
  const partition = srunArgs.find((a) => a.startsWith('--partition='))?.slice('--partition='.length);
  let out: string;
  try {
    out = (await execFileP('sinfo', ['-h', '-N', ...(partition ? ['-p', partition] : []), '-o', '%N %t %P'], { encoding: 'utf8', timeout: 15_000 })).stdout;
  } catch {
    return undefined;
  }
  const left = new Set([...allocated, ...(await Promise.all(exclude.map((l) => hostnamesOf(l)))).flat()]);
  const spares = new Set<string>();
  for (const line of out.split('\n')) {
    const [node, state = '', part = ''] = line.trim().split(/\s+/);
    if (!node || left.has(node) || (!partition && !part.endsWith('*'))) continue;
    if (!state.includes('*') && USABLE.has(state.replace(/[~#!%$@^\-+]+$/, ''))) spares.add(node);
  }
  return [...spares].sort();
}
