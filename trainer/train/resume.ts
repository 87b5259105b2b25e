// `--resume`: rank 0 reads the newest checkpoint (it may be the only host that has it) and sends
// batch-norm state and optimizer state to every rank (each rank its own segment of the optimizer's
// moments: exchange.ts); the parameters go out in rank.ts's broadcast of rank 0's weights after this.
import type { Collective } from '../collectives';
import type { TfjsResNet } from '../engine/tfjs';
import type { createOptimizer } from '../optim/optimizer';
import { CohortError, type TrainConfig } from '../protocol';
import { loadLatestCheckpoint } from './checkpoint';
import type { Emit } from './emit';
import { sendOptimizerState } from './exchange';

export async function resume(
  config: TrainConfig,
  dir: string,
  m: TfjsResNet,
  params: Float32Array,
  optimizer: ReturnType<typeof createOptimizer>,
  c: Collective,
  isMaster: boolean,
  emit: Emit,
  log: (s: string) => void,
): Promise<number> {
  if (!dir) throw new CohortError('bad-config', '--resume needs --checkpoint-dir DIR', { hint: 'add --checkpoint-dir DIR (where the earlier run wrote its checkpoints), or drop --resume' });
  // Rank 0 reads the checkpoint (it may be the only host that has it) and sends it.
  const header = new Float32Array(3); // [found, step, optimizer t] (exact in float32 up to 2^24)
  const ck = isMaster ? loadLatestCheckpoint(dir) : undefined;
  if (ck) {
    if (ck.meta.paramCount !== m.paramCount || ck.meta.optimizer !== config.optimizer) {
      throw new CohortError('checkpoint-mismatch', `--resume: ${ck.path} is for ${ck.meta.paramCount} params / ${ck.meta.optimizer}, this run has ${m.paramCount} / ${config.optimizer}`, { hint: 'resume with the model and optimizer of the run that wrote it, or use another --checkpoint-dir' });
    }
    header[0] = 1;
    header[1] = ck.step;
    header[2] = ck.optimizerT;
  }
  await c.broadcast(header, 0);
  if (header[0] === 0) {
    log(`resume: no checkpoint in ${dir}; starting from step 0`);
    return 0;
  }
  const st = optimizer.state();
  const bn = m.getBnState();
  if (ck) {
    params.set(ck.sections.params!);
    bn.set(ck.sections.bn!);
    for (const [k, b] of Object.entries(st.buffers)) b.set(ck.sections[`opt.${k}`]!);
  }
  // params: not here; rank.ts broadcasts rank 0's weights (these, on a resume) right after.
  await c.broadcast(bn, 0);
  await sendOptimizerState(Object.values(st.buffers), c, config.fp16);
  const step = header[1]!;
  optimizer.loadState({ t: header[2]!, buffers: st.buffers });
  m.setBnState(bn);
  if (ck) emit({ type: 'checkpoint', step, path: ck.path, action: 'resumed' });
  log(`resume: continuing from step ${step}`);
  return step;
}
