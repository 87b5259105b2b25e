// Learning-rate schedule: linear warm-up (SC20: large global batches need it), then constant,
// cosine to zero, or step decay (×0.1 at 50% and 75% of training, the classic ImageNet recipe).
import type { ScheduleName } from '../protocol';

export function learningRate(step: number, o: { lr: number; warmupSteps: number; totalSteps: number; schedule: ScheduleName }): number {
  if (o.warmupSteps > 0 && step < o.warmupSteps) return (o.lr * (step + 1)) / o.warmupSteps;
  const span = Math.max(1, o.totalSteps - o.warmupSteps);
  const progress = Math.min(1, Math.max(0, (step - o.warmupSteps) / span));
  switch (o.schedule) {
    case 'constant':
      return o.lr;
    case 'cosine':
      return 0.5 * o.lr * (1 + Math.cos(Math.PI * progress));
    case 'step':
      return o.lr * (progress >= 0.75 ? 0.01 : progress >= 0.5 ? 0.1 : 1);
  }
}
