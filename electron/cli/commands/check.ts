// `cohort check PROFILE [--json] [--accept-new-host-key] [training options]`: the cluster doctor
// (electron/core/check). Exit 0 when nothing would make a run fail (warnings allowed), 1 when
// something would, 2 for usage errors. --json prints exactly one document (CheckResult).
import { join } from 'node:path';
import type { ErrorInfo, TrainConfig } from '../../../trainer/protocol';
import type { CheckResult } from '../../../trainer/protocol/check';
import { localProfile, resolveRunConfig, sparesFor, type Profile } from '../../common';
import { CheckStore } from '../../core/check/check-store';
import { fmtMbps } from '../../core/check/predict';
import { runCheck } from '../../core/check/run-check';
import { resolvePaths } from '../../core/paths';
import { localLink } from '../../core/runs/local-run';
import { RunStore } from '../../core/runs/run-store';
import { onProcessSignals } from '../../../trainer/util/node-lifecycle';
import { EXIT, UsageError } from '../exit-codes';
import { hintText } from '../hint-text';
import type { CliIo } from '../io';
import type { Parsed } from '../command-spec';
import { trainOverridesFromFlags } from '../train-flags';
import { loadProfile, makeCluster } from './cluster';

export async function checkCommand({ values, positionals }: Parsed, io: CliIo): Promise<number> {
  const name = positionals[0];
  const profile = name === 'local' ? localProfile(1) : await loadProfile(io, name, 'check');
  const config = resolveRunConfig(profile, trainOverridesFromFlags(values));
  const result = await checkProfile(io, profile, config, { acceptNewHostKeys: !!values['accept-new-host-key'], noCompute: !!values['no-compute'], progress: !values.json });
  io.stdout.write(values.json ? JSON.stringify(result, null, 2) + '\n' : formatCheck(result));
  return result.ok ? EXIT.ok : EXIT.trainingFailed;
}

/**
 * `cohort run --check`: the check first (printed on stderr). What to start: every host (`exclude`
 * empty), or, when the errors are all on follower hosts the profile's spare hosts can take the place
 * of (issue 21 item 5, check-spares.ts), without those hosts; `refused`: not started (errors), the
 * error the run's history records (startRun's `refused`: the refusal still gets a run id).
 */
export async function checkBeforeRun(io: CliIo, profile: Profile, config: TrainConfig, acceptNewHostKeys: boolean): Promise<{ exclude: string[]; refused?: ErrorInfo }> {
  const result = await checkProfile(io, profile, config, { acceptNewHostKeys, noCompute: false, progress: true });
  io.stderr.write(formatCheck(result));
  if (result.ok) return { exclude: [] };
  const moves = sparesFor(profile, result.problems, result.allocation);
  if (moves) {
    const others = result.allocation?.spares?.filter((s) => !moves.some((m) => m.excluded === s));
    for (const m of moves) io.stderr.write(`run: the check found errors on ${m.excluded} (above): it is left out of this run; ${m.replacement ? `the spare host ${m.replacement} takes its ranks` : `sbatch --exclude=${m.excluded}: Slurm gives the run other nodes of the partition (usable at the check: ${others?.join(', ')})`}\n`);
    return { exclude: moves.map((m) => m.excluded) };
  }
  const bad = [...new Set(result.problems.filter((p) => p.severity === 'error').map((p) => p.host))];
  const why = result.allocation && bad.every((b) => result.allocation!.nodes.includes(b)) ? ` (Slurm: the partition had ${result.allocation.spares ? `${result.allocation.spares.length} other usable node(s)${result.allocation.spares.length ? `, ${result.allocation.spares.join(', ')}` : ''}` : 'other usable nodes unknown'}, fewer than the ${bad.length} to leave out)` : '';
  io.stderr.write(`run: not started: the check found errors on ${bad.join(', ')} (above)${why}; fix them, or run without --check\n`);
  return { exclude: [], refused: { code: 'check-failed', message: `not started: cohort check found errors on ${bad.join(', ')}${why}`, ...(bad.length === 1 ? { host: bad[0]! } : {}) } };
}

async function checkProfile(io: CliIo, profile: Profile, config: TrainConfig, o: { acceptNewHostKeys: boolean; noCompute: boolean; progress: boolean }): Promise<CheckResult> {
  const linkMs = io.env.COHORT_CHECK_LINK_MS === undefined ? undefined : Number(io.env.COHORT_CHECK_LINK_MS);
  if (linkMs !== undefined && !(Number.isInteger(linkMs) && linkMs >= 200 && linkMs <= 60_000)) throw new UsageError(`COHORT_CHECK_LINK_MS=${JSON.stringify(io.env.COHORT_CHECK_LINK_MS)}: give whole milliseconds from 200 to 60000 (unset: 2000)`);
  const paths = resolvePaths(io.env);
  const store = new CheckStore(join(paths.dataDir, 'checks'));
  const runs = new RunStore(join(paths.dataDir, 'runs'));
  const cluster = makeCluster(io);
  // Ctrl-C (or a closed terminal): a Slurm check's allocation is cancelled before the CLI exits;
  // an SSH check's host commands all end on their own, so it exits at once.
  const abort = new AbortController();
  const signals = onProcessSignals(['SIGINT', 'SIGTERM', 'SIGHUP'], () => (profile.scheduler ? abort.abort() : process.exit(EXIT.cancelled)));
  try {
    const result = await runCheck(profile, config, { cluster, localLink: () => localLink(join(paths.dataDir, 'local')), history: () => runs.list(), previous: store.last(profile.name) }, {
      ...(o.acceptNewHostKeys ? { acceptNewHostKeys: true } : {}),
      ...(linkMs ? { linkMs } : {}),
      ...(o.noCompute ? { noCompute: true } : {}),
      signal: abort.signal,
      ...(o.progress ? { onProgress: (l: string) => io.stderr.write(`${l}...\n`) } : {}),
    });
    await store.save(result);
    return result;
  } catch (err) {
    if (abort.signal.aborted) {
      io.stderr.write(`${(err as Error).message}\n`);
      process.exit(EXIT.cancelled);
    }
    throw err;
  } finally {
    signals.dispose();
    cluster.dispose();
  }
}

/** The human form: hosts, the rows of the consistency table that differ, links, problems, prediction. */
export function formatCheck(r: CheckResult): string {
  const out: string[] = [];
  const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
  out.push(`hosts of ${r.profile}:${r.allocation ? ` (Slurm nodes, checked inside job ${r.allocation.jobId}, released)` : ''}`);
  for (const h of r.hosts) {
    const x = h.report;
    if (!x) {
      out.push(`  ${h.host} (${h.address}): ${h.reachable ? 'not checked' : 'unreachable'}`);
      continue;
    }
    const engine = 'error' in x.engine ? 'no engine' : `${x.engine.name}${x.engine.name === 'tfjs' ? ` (${x.tfjsBackend})` : x.python?.torch ? ` ${x.python.torch}${x.python.cuda ? ` CUDA ${x.python.cuda}` : ' CPU'}` : ''}`;
    const gpus = x.gpus.length ? x.gpus.map((g) => `GPU ${g.index} ${g.name} ${gib(g.memoryTotalBytes)}`).join(', ') : x.smi === 'missing' ? 'no GPU' : `nvidia-smi ${x.smi}`;
    out.push(`  ${h.host} (${h.address}): node ${x.nodeVersion}, bundle ${x.bundleHash.slice(0, 12)}, ${engine}, ${x.cores} cores, ${x.freeBytes !== undefined ? `${gib(x.freeBytes)} free` : 'free disk ?'}, clock ${h.clockOffsetMs !== undefined ? `${h.clockOffsetMs >= 0 ? '+' : ''}${h.clockOffsetMs} ms` : '?'}, ${gpus}`);
  }
  const differing = r.consistency.filter((c) => c.verdict !== 'same');
  out.push(`consistency: ${r.consistency.length - differing.length} of ${r.consistency.length} the same on every host${differing.length ? '' : ` (${r.consistency.map((c) => c.what).join(', ')})`}`);
  for (const c of differing) out.push(`  ${c.verdict === 'error' ? 'DIFFERS' : 'differs'} ${c.what}: ${Object.entries(c.values).map(([h, v]) => `${h} ${v}`).join(' | ')}`);
  if (r.links.length) {
    out.push('links (plain TCP between the hosts, as the ranks use them):');
    for (const l of r.links) out.push(`  ${l.from} → ${l.to}  ${l.kind === 'ring' ? fmtMbps(l.mbps).padStart(12) : 'reachable'.padStart(12)}  rtt ${l.latencyMs} ms${l.kind === 'rendezvous' ? '  (rendezvous)' : l.kind === 'spare' ? '  (spare, if it took a host\'s place)' : ''}`);
  }
  if (r.prediction) {
    const p = r.prediction;
    out.push(`prediction for ${p.worldSize} rank(s):`);
    out.push(`  compute ${ms(p.computeMs)} per step alone (${p.computeSource})${p.sharedComputeMs !== undefined && p.sharing ? `; ${ms(p.sharedComputeMs)} with ${p.sharing} at once` : ''}`);
    out.push(`  gradients ${(p.gradientBytes / 1e6).toFixed(1)} MB per rank per step (${p.wire} wire); exchange ${ms(p.exchangeMs)} over the slowest link`);
    out.push(`  step ${ms(p.stepMs)}, scaling efficiency ${(p.scaling * 100).toFixed(1)}%`);
    out.push(`  bottleneck: ${p.bottleneck}`);
  }
  const errors = r.problems.filter((p) => p.severity === 'error');
  const warnings = r.problems.filter((p) => p.severity === 'warning');
  for (const p of [...errors, ...warnings]) out.push(`${p.severity === 'error' ? 'ERROR' : 'warning'} [${p.host}] ${p.code}: ${p.message}\n${hintText(p).trimEnd()}`);
  const took = `${(r.durationMs / 1000).toFixed(1)} s${r.phasesMs ? `: ${Object.entries(r.phasesMs).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`).join(', ')}` : ''}`;
  out.push(errors.length ? `${errors.length} error(s), ${warnings.length} warning(s): a run would fail (${took})` : `ok: nothing would make a run fail${warnings.length ? ` (${warnings.length} warning(s))` : ''} (${took})`);
  return out.join('\n') + '\n';
}

const ms = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${Math.round(x)} ms`);
