// Restart of a durable run on a 3-host cluster of real sshd hosts (network namespaces), issue 12:
// one detached run with --max-restarts N trains; each trial waits for a checkpoint newer than the
// last resume, kills one rank with SIGKILL (a follower's and the leader's in turn), and reads the
// leader's own record for
//   kill → `restart` event   (failure detected, every rank stopped, the leader decided)
//   kill → first step after the resume (ranks restarted, checkpoint loaded, warm-up done)
// The hosts share this machine's clock and filesystem, so the record's event times are comparable
// with the kill's. Medians over --trials (default 3).
//   npx tsx test/bench/restart.ts [--trials 3]
import { mkdtempSync, rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CohortEvent } from '../../trainer/protocol';
import { harnessMode, startHosts } from '../harness/sshd-hosts';
import { cohortCli, countOption, machine, median, until, writeResults } from './bench-util';
import { tinyRun } from '../helpers/tiny';

const trials = countOption('trials', 3);
const every = 3;
const tiny = [...tinyRun({ width: null }), '--checkpoint-every', String(every)];

if ((await harnessMode()) !== 'netns') {
  writeResults('restart', { skipped: 'network namespaces unavailable (needs root and iproute2)' }, '## Restart\n\nskipped: network namespaces unavailable');
  process.exit(0);
}

const cluster = await startHosts(3);
const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-restart-'));
const env = { ...process.env, COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: cluster.knownHostsPath, SSH_AUTH_SOCK: '' };

const cli = (args: string[]) => cohortCli(args, env);

/** The leader's own record (rank 0's host). */
function record(runId: string): CohortEvent[] {
  const p = join(cluster.hosts[0]!.workdir, 'runs', runId, 'events.jsonl');
  if (!existsSync(p)) return [];
  return readFileSync(p, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as CohortEvent);
}


let runId = '';
try {
  const profile = join(dir, 'trio.json');
  writeFileSync(profile, JSON.stringify({ name: 'trio', hosts: cluster.hosts.map((h) => ({ name: h.name, address: h.address, port: h.port, user: cluster.user, identityFile: cluster.clientKeyPath, slots: 1, workdir: h.workdir })) }));
  await cli(['profiles', 'import', profile]);
  const started = await cli(['run', '--profile', 'trio', '--steps', '100000', ...tiny, '--max-restarts', String(trials), '--detach', '--json']);
  if (started.code !== 0) throw new Error(`run --detach failed: ${started.stderr}`);
  runId = (JSON.parse(started.stdout.split('\n')[0]!) as { runId: string }).runId;

  const rows: { trial: number; host: string; rank: number; resumeStep: number; toRestartEventMs: number; toFirstStepMs: number }[] = [];
  for (let i = 0; i < trials; i++) {
    const restartsBefore = record(runId).filter((e) => e.type === 'restart').length;
    const lastResume = record(runId).filter((e) => e.type === 'restart').at(-1);
    const after = lastResume?.type === 'restart' ? lastResume.resumeStep : 0;
    // a checkpoint newer than the last resume, and a step after it: the resume has something to skip
    await until('a checkpoint after the last resume', () => record(runId).some((e) => e.type === 'checkpoint' && e.step > after + every - 1));
    const target = i % 2 === 0 ? 1 : 0; // h2's rank, then the leader's own rank 0, in turn
    const victim = (await cluster.processes(target)).find((p) => p.cmd.includes('cohort-trainer.mjs rank') && p.cmd.includes(`--run ${runId}`));
    if (!victim) throw new Error(`no rank process of ${runId} on ${cluster.hosts[target]!.name}`);
    const killedAt = Date.now();
    await cluster.exec(target, `kill -KILL ${victim.pid}`);
    const restart = await until('the restart event', () => record(runId).filter((e) => e.type === 'restart')[restartsBefore]);
    if (restart.type !== 'restart') throw new Error('not a restart');
    const firstStep = await until('the first step after the resume', () => record(runId).find((e) => e.type === 'step' && e.time >= restart.time && e.step > restart.resumeStep));
    rows.push({ trial: i, host: restart.host, rank: restart.rank, resumeStep: restart.resumeStep, toRestartEventMs: restart.time - killedAt, toFirstStepMs: firstStep.time - killedAt });
    console.log(JSON.stringify(rows.at(-1)));
  }
  const steps = record(runId).filter((e): e is Extract<CohortEvent, { type: 'step' }> => e.type === 'step');
  const intervals = steps.slice(1).map((s, i) => s.time - steps[i]!.time).filter((x) => x > 0);
  const stepInterval = median(intervals);
  const md = [
    '## Restart of a durable run (3 sshd hosts in network namespaces)',
    '',
    `${trials} restarts of one detached run (tiny model, cifar stem 8², batch 2, 1 rank per host, a checkpoint every ${every} steps; a step every ${stepInterval.toFixed(0)} ms, median). Each trial SIGKILLs one rank (h2's, then the leader's rank 0, in turn), times from the leader's own record:`,
    '',
    '| | median ms | trials (ms) |',
    '|---|---|---|',
    `| kill → \`restart\` event (failure seen, every rank stopped, decided) | ${median(rows.map((r) => r.toRestartEventMs)).toFixed(0)} | ${rows.map((r) => r.toRestartEventMs.toFixed(0)).join(', ')} |`,
    `| kill → first step after the resume | ${median(rows.map((r) => r.toFirstStepMs)).toFixed(0)} | ${rows.map((r) => r.toFirstStepMs.toFixed(0)).join(', ')} |`,
    '',
    `Killed: ${rows.map((r) => `rank ${r.rank} on ${r.host} (resumed from step ${r.resumeStep})`).join('; ')}. The first step after the resume includes starting the ranks again, the rendezvous, loading the checkpoint and the warm-up step.`,
  ].join('\n');
  writeResults('restart', { machine: machine(), trials, every, stepIntervalMs: stepInterval, rows }, md);
} finally {
  if (runId) await cli(['stop', runId]);
  await cluster.dispose();
  rmSync(dir, { recursive: true, force: true });
}
