// Checkpoints: one file per save, `step-<N>.ckpt`, holding a JSON header line and raw float32
// sections (weights, batch-norm statistics, optimizer state). Written atomically by rank 0 only;
// on resume rank 0 reads the newest and broadcasts it. The format is ours: a small header the
// user can read with `head -1`, then bytes.
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CohortError } from '../protocol/errors';
import { writeFileAtomicSync } from '../util/atomic-write';

const MAGIC = 'cohort-checkpoint';
const FORMAT_VERSION = 1;

export interface CheckpointData {
  step: number;
  epoch: number;
  /** Facts that must match to resume (model shape). */
  meta: { paramCount: number; classes: number; stem: string; optimizer: string };
  optimizerT: number;
  sections: Record<string, Float32Array>;
}

interface Header {
  magic: string;
  version: number;
  step: number;
  epoch: number;
  meta: CheckpointData['meta'];
  optimizerT: number;
  sections: { name: string; length: number }[];
}

export function checkpointPath(dir: string, step: number): string {
  return join(dir, `step-${String(step).padStart(8, '0')}.ckpt`);
}

export function saveCheckpoint(dir: string, data: CheckpointData, keep = 2): string {
  const header: Header = {
    magic: MAGIC,
    version: FORMAT_VERSION,
    step: data.step,
    epoch: data.epoch,
    meta: data.meta,
    optimizerT: data.optimizerT,
    sections: Object.entries(data.sections).map(([name, a]) => ({ name, length: a.length })),
  };
  let headerText = JSON.stringify(header) + '\n';
  // Pad the header so the float sections start 4-byte aligned (readable as Float32Array views).
  headerText = headerText.padStart(Math.ceil(Buffer.byteLength(headerText) / 4) * 4, ' ');
  const parts: Uint8Array[] = [Buffer.from(headerText)];
  for (const a of Object.values(data.sections)) parts.push(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  const path = checkpointPath(dir, data.step);
  writeFileAtomicSync(path, parts, { afterChunk: testHoldMidWrite(process.env.COHORT_TEST_CHECKPOINT_HOLD) });
  for (const old of listCheckpoints(dir).slice(0, -keep)) rmSync(old.path, { force: true });
  return path;
}

/**
 * TEST-ONLY hook (never set in production): COHORT_TEST_CHECKPOINT_HOLD names a file; while it exists,
 * the writer stops after each chunk of its temp file (the header first, so the file on disk is partial),
 * blocking the rank's thread, as a slow disk would. It lets test/host/agent-defects.test.ts SIGKILL a real
 * rank in the middle of a real checkpoint write (issue 24 defect 12), which a plain write is too fast to
 * hit reliably. Bounded at 120 s so a forgotten hold file cannot hang a run.
 */
function testHoldMidWrite(holdFile: string | undefined): (() => void) | undefined {
  if (!holdFile) return undefined;
  return () => {
    const until = Date.now() + 120_000;
    const cell = new Int32Array(new SharedArrayBuffer(4));
    while (existsSync(holdFile) && Date.now() < until) Atomics.wait(cell, 0, 0, 50);
  };
}

export function listCheckpoints(dir: string): { step: number; path: string }[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((f) => /^step-(\d+)\.ckpt$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ step: Number(m[1]), path: join(dir, m[0]) }))
    .sort((a, b) => a.step - b.step);
}

/** The torch engine's checkpoint files (cohort_torch/checkpoint.py writes `torch-step%08d.pt`). */
const TORCH_CHECKPOINT = /^torch-step(\d+)\.pt$/;

/** The step of the newest checkpoint in `dir` written by either engine (0: none): where a restart resumes. */
export function newestCheckpointStep(dir: string): number {
  if (!existsSync(dir)) return 0;
  const torch = readdirSync(dir)
    .map((f) => TORCH_CHECKPOINT.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]));
  return Math.max(0, listCheckpoints(dir).at(-1)?.step ?? 0, ...torch);
}

export function loadLatestCheckpoint(dir: string): (CheckpointData & { path: string }) | undefined {
  const latest = listCheckpoints(dir).at(-1);
  return latest ? { ...loadCheckpoint(latest.path), path: latest.path } : undefined;
}

export function loadCheckpoint(path: string): CheckpointData {
  const bytes = readFileSync(path);
  const nl = bytes.indexOf(10);
  let header: Header;
  try {
    header = JSON.parse(bytes.subarray(0, nl).toString()) as Header;
  } catch {
    throw new CohortError('bad-checkpoint', `${path} is not a Cohort checkpoint (unreadable header)`, { hint: 'point --checkpoint-dir at a folder of Cohort checkpoints, or delete this file' });
  }
  if (header.magic !== MAGIC || header.version !== FORMAT_VERSION) throw new CohortError('bad-checkpoint', `${path} is not a Cohort checkpoint of format ${FORMAT_VERSION}`, { hint: 'it was written by another Cohort version or is another file; move it out of --checkpoint-dir' });
  const sections: Record<string, Float32Array> = {};
  let off = nl + 1;
  for (const s of header.sections) {
    const end = off + s.length * 4;
    if (end > bytes.length) throw new CohortError('bad-checkpoint', `${path} is truncated in section "${s.name}"`, { hint: 'delete it to resume from the previous checkpoint' });
    sections[s.name] = new Float32Array(bytes.buffer.slice(bytes.byteOffset + off, bytes.byteOffset + end));
    off = end;
  }
  return { step: header.step, epoch: header.epoch, meta: header.meta, optimizerT: header.optimizerT, sections };
}
