// Where the built trainer bundle lives (resources/trainer, made by `npm run build`): the local
// agent runs it, and deploy uploads it. COHORT_TRAINER_DIR overrides (packaged app: extraResources).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CohortError } from '../../trainer/protocol';

export interface TrainerBundle {
  dir: string;
  entry: string;
  hash: string;
  files: { path: string; bytes: number; sha256: string }[];
}

export function locateTrainerBundle(env: NodeJS.ProcessEnv = process.env): TrainerBundle {
  const candidates: string[] = [];
  if (env.COHORT_TRAINER_DIR) candidates.push(env.COHORT_TRAINER_DIR);
  let d = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    candidates.push(join(d, 'resources', 'trainer'));
    d = dirname(d);
  }
  for (const dir of candidates) {
    const manifest = join(dir, 'manifest.json');
    if (existsSync(manifest)) {
      const m = JSON.parse(readFileSync(manifest, 'utf8')) as { hash: string; files: TrainerBundle['files'] };
      return { dir, entry: join(dir, 'cohort-trainer.mjs'), hash: m.hash, files: m.files };
    }
  }
  throw new CohortError('no-trainer-bundle', 'the trainer bundle (resources/trainer) is not built; run "npm run build" in the Cohort folder');
}
