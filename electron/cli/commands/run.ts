// `cohort run --local [--ranks N] [trainer flags] [--json]`: trains on this machine with the
// same agent, events and run history as a cluster run.
import { join } from 'node:path';
import { makeEvent, type CohortEvent, type Disposable, type ErrorInfo } from '../../../trainer/protocol';
import { onProcessSignals } from '../../../trainer/util/node-lifecycle';
import { checkRunUserFields, describeExpected, followRun, localProfile, resolveRunConfig, runExpected, type RunUserFields } from '../../common';
import type { CohortService } from '../../core/service/cohort-service';
import type { RunResult } from '../../core/runs/run-controller';
import { makeService } from '../service';
import { checkBeforeRun } from './check';
import { loadProfile, progressPrinter } from './cluster';
import { EXIT, UsageError } from '../exit-codes';
import type { CliIo } from '../io';
import { humanPrinter, jsonPrinter } from '../event-printer';
import { parseCommandLine, trainFlagOptions, trainFlagUsage, trainOverridesFromFlags } from '../train-flags';

export const RUN_USAGE = `usage: cohort run --local [--ranks N] [options]
       cohort run --profile NAME [options] [--accept-new-host-key]
training options (a profile's defaults apply under them; exactly one of --steps/--epochs is > 0):
${trainFlagUsage()}
output: --json (events only, one per line; the first is a log event carrying runId, the last is done;
         a failure ends with error, then done; refused by --check too: a failed launch in the history)  --verbose (every rank's log lines)
  --per-rank (one line per rank every window: data, compute, wait, exchange, optimizer)
  --system   (one line per host every window: CPU % of the host and of the run's ranks, load, net MB/s, memory, GPU %)
  --name NAME, --tag TAG (repeatable), --notes TEXT   recorded with the run (runs list/show, History)
  --check    run \`cohort check\` on the profile first (printed on stderr); refuse to start on errors
             (recorded as a failed launch, code check-failed; errors a spare host or node absorbs: left out)
  --detach   start the run and return at once, printing its id (with --json: the first event
             carrying runId); the run lives on its hosts: "cohort attach RUN", "cohort stop RUN"
A run outlives the CLI (killed, terminal closed, SSH link lost); Ctrl-C in the foreground stops
it, a second Ctrl-C stops waiting for the hosts to confirm.`;

export async function runCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(args, {
    ...trainFlagOptions(),
    local: { type: 'boolean' },
    profile: { type: 'string' },
    ranks: { type: 'string' },
    json: { type: 'boolean' },
    detach: { type: 'boolean' },
    verbose: { type: 'boolean' },
    'per-rank': { type: 'boolean' },
    system: { type: 'boolean' },
    'accept-new-host-key': { type: 'boolean' },
    'max-restarts': { type: 'string' },
    'no-queue': { type: 'boolean' },
    check: { type: 'boolean' },
    name: { type: 'string' },
    tag: { type: 'string', multiple: true },
    notes: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(RUN_USAGE + '\n');
    return EXIT.ok;
  }
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}\n${RUN_USAGE}`);
  if (!values.local && !values.profile) throw new UsageError(`say where to run: --local, or --profile NAME\n${RUN_USAGE}`);
  if (values.local && values.profile !== undefined && values.profile !== 'local') {
    throw new UsageError(`run: --local and --profile ${String(values.profile)} conflict: --local runs on this machine, --profile on that profile's hosts; give one`);
  }
  const local = !!values.local || values.profile === 'local';
  if (values.ranks !== undefined && !local) throw new UsageError('--ranks applies to --local; a cluster profile runs one rank per slot (edit the hosts\' slots)');
  const ranks = values.ranks === undefined ? 1 : Number(values.ranks);
  if (!Number.isInteger(ranks) || ranks < 1 || ranks > 64) throw new UsageError(`--ranks: expected a whole number from 1 to 64, got ${JSON.stringify(values.ranks)}`);
  const maxRestarts = values['max-restarts'] === undefined ? 0 : Number(values['max-restarts']);
  if (!Number.isInteger(maxRestarts) || maxRestarts < 0 || maxRestarts > 100) throw new UsageError(`--max-restarts: expected a whole number from 0 to 100, got ${JSON.stringify(values['max-restarts'])}`);
  const profile = local ? localProfile(ranks) : await loadProfile(io, values.profile, RUN_USAGE);
  const overrides = trainOverridesFromFlags(values); // profile defaults go under them in core (startRun)
  // Validate at the edge, before any status line or connection: the same resolution core applies
  // when it starts the run (core merges the profile defaults once; the printer shows what was asked;
  // --check predicts this config).
  const asked = resolveRunConfig(profile, overrides);
  // What the user says of the run, checked here too (a refused name is a usage error before any connection).
  const user = runUserFields(values.name, values.tag, values.notes);
  // A check with errors no spare absorbs: the launch is refused, and recorded as a failed launch like a
  // refused connection (startRun's `refused`), so --json still leads with its runId (below).
  const checked: { exclude: string[]; refused?: ErrorInfo } = values.check ? await checkBeforeRun(io, profile, asked, !!values['accept-new-host-key']) : { exclude: [] };

  // The CLI is one more client of the one Api implementation (CohortService), as the dashboard is.
  const service = makeService(io);
  const printer = values.json ? jsonPrinter(io.stdout) : humanPrinter(io.stdout, io.stderr, { verbose: !!values.verbose, perRank: !!values['per-rank'], system: !!values.system, asked: () => asked });
  let runId: string | undefined;
  let offEvents = () => undefined as void;
  const offDeploy = values.json ? () => undefined : service.onDeployProgress(progressPrinter(io));
  const signals = new CtrlC(io, (force) => {
    if (runId === undefined) return false;
    io.stderr.write(force ? `\nforcing the stop of run ${runId} now\n` : `\nstopping run ${runId} on every host (Ctrl-C again to force)...\n`);
    service.stopRun(runId, { force }).catch(() => undefined);
    return true;
  });
  const t0 = Date.now();
  try {
    if (!checked.refused) printer.status?.(local ? `starting ${ranks} local rank(s)` : `connecting to ${profile.hosts.length} host(s) of ${profile.name}`);
    try {
      ({ runId } = await service.startRun({ profile: profile.name, config: overrides, ...(local ? { ranks } : {}), ...(values['accept-new-host-key'] ? { acceptNewHostKeys: true } : {}), maxRestarts, ...(values['no-queue'] ? { queue: false } : {}), ...(checked.exclude.length ? { exclude: checked.exclude } : {}), ...(checked.refused ? { refused: checked.refused } : {}), ...user }));
    } catch (err) {
      // --json promises a stream that always ends with `done`: a failure before the run exists (a
      // refused connection, a failed deploy) is an `error` event, then `done`, then the exit code.
      if (values.json) {
        const e = err as Error & { code?: string; hint?: string; host?: string; runId?: string };
        // A launch that failed after its run was recorded (a refused connection) still leads with its id.
        if (typeof e.runId === 'string') printer.event(runIdEvent(e.runId, `run ${e.runId} failed to start`));
        const message = e.hint && !e.message.toLowerCase().includes(e.hint.toLowerCase()) ? `${e.message} (hint: ${e.hint})` : e.message;
        printer.event(makeEvent({ type: 'error', rank: -1, host: e.host ?? profile.hosts[0]?.name ?? profile.name, message, logTail: [], ...(typeof e.code === 'string' ? { code: e.code } : {}) }));
        printer.event(makeEvent({ type: 'done', status: 'failed', steps: 0, medianGlobalSamplesPerSec: null, paramChecksum: '', durationMs: Date.now() - t0 }));
      }
      throw err;
    }
    const resultOf = service.runResult(runId); // asked at once: a run that fails to start ends quickly
    if (values.detach) {
      // The run lives on its hosts; this process only starts it, and goes away once every host's
      // agent runs (going earlier would close the SSH sessions under the hosts' run-start).
      if (values.json) printer.event(runIdEvent(runId, `run ${runId} starting (detached)`));
      else io.stdout.write(`${runId}\n`);
      if (await (service.started(runId) ?? Promise.resolve(false))) {
        if (!values.json) io.stderr.write(`run ${runId} started; follow it with "cohort attach ${runId}", stop it with "cohort stop ${runId}"\n`);
        return EXIT.ok;
      }
      // It did not start: told like a foreground run that failed (its error, then done), below.
    } else if (values.json) printer.event(runIdEvent(runId, `run ${runId} starting`));
    // This run's events only, each printed once in record order (what it recorded before we
    // subscribed comes from attachRun's backfill).
    offEvents = (await followRun(service, runId, (e) => printer.event(e))).dispose;
    const result = await resultOf;
    if (!result) {
      const message = `run ${runId} ended before it could be followed ("cohort runs show ${runId}" shows what it recorded)`;
      if (values.json) {
        printer.event(makeEvent({ type: 'error', rank: -1, host: profile.hosts[0]?.name ?? profile.name, message, logTail: [] }));
        printer.event(makeEvent({ type: 'done', status: 'failed', steps: 0, medianGlobalSamplesPerSec: null, paramChecksum: '', durationMs: Date.now() - t0 }));
      }
      throw new Error(message);
    }
    if (!local) await reportLeftovers(service, runId, io);
    if (!values.json) io.stderr.write(`run ${runId} recorded in ${join(service.runs.runsDir, runId)}\n`);
    const meta = values.json ? undefined : service.runs.meta(runId);
    if (meta && meta.worldSize > 1) io.stderr.write(`expected vs achieved: ${describeExpected(runExpected(meta, service.runs.list()))}\n`);
    if (result.status === 'cancelled') {
      if (!values.json) io.stderr.write(`run ${runId} was stopped (${signals.count ? 'Ctrl-C' : 'cancelled'})\n`);
      return EXIT.cancelled;
    }
    return exitCodeOf(result);
  } finally {
    printer.close?.();
    signals.dispose();
    offEvents();
    offDeploy();
    service.dispose();
  }
}

/** --name, --tag (repeatable), --notes as the run record keeps them (the rule Launch applies too); a UsageError naming the flag otherwise. */
function runUserFields(name: string | undefined, tags: string[] | undefined, notes: string | undefined): RunUserFields {
  const r = checkRunUserFields({ name, tags, notes });
  if (!r.ok) throw new UsageError(`${USER_FIELD_FLAG[r.field]}: ${r.reason}`);
  return r.fields;
}
const USER_FIELD_FLAG = { name: '--name', tags: '--tag', notes: '--notes' } as const;

/** The first line of every `cohort run --json` stream: a log event carrying the run's id. */
function runIdEvent(runId: string, message: string): CohortEvent {
  return makeEvent({ type: 'log', level: 'info', message, runId });
}

/** The run's exit code: 0 ok, 130 cancelled, 3 a connection problem (or lost), 1 failed. The one
 *  mapping, for a run's result and for a finished run's history (`cohort attach`). */
export function exitCodeOf(result: Pick<RunResult, 'status'> & { error?: { code?: string } }): number {
  if (result.status === 'ok') return EXIT.ok;
  if (result.status === 'cancelled') return EXIT.cancelled;
  if (result.status === 'lost') return EXIT.connection;
  return result.error?.code?.startsWith('ssh-') ? EXIT.connection : EXIT.trainingFailed;
}

/** After a cluster run: every host is checked for processes of this run (there should be none); each host answers for itself. */
async function reportLeftovers(service: CohortService, runId: string, io: CliIo): Promise<void> {
  for (const h of await service.leftovers(runId, { timeoutMs: 5000 })) {
    if (h.error) io.stderr.write(`${h.host}: could not check for leftovers: ${h.error.message}\n`);
    else io.stderr.write(h.processes.length ? `${h.host}: ${h.processes.length} process(es) of this run still running:\n${h.processes.map((p) => '    ' + p).join('\n')}\n` : `${h.host}: nothing left running\n`);
  }
}

/**
 * Ctrl-C (SIGINT), SIGTERM and SIGHUP (a closed terminal) stop the run; a second one forces the
 * stop at once. Until a run exists, they interrupt the start as usual (exit 130).
 */
class CtrlC {
  count = 0;
  private readonly handler = () => {
    this.count++;
    if (!this.onStop(this.count > 1)) process.exit(EXIT.cancelled);
  };
  constructor(
    _io: CliIo,
    private readonly onStop: (force: boolean) => boolean,
  ) {
    this.handlers = onProcessSignals(SIGNALS, this.handler);
  }
  private readonly handlers: Disposable;
  dispose(): void {
    this.handlers.dispose();
  }
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
