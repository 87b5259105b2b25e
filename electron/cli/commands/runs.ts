// `cohort runs list|show|export` and `cohort stop RUN`: the run history under the data dir.
import { join } from 'node:path';
import { DEFAULT_SORT, EMPTY_QUERY, stopOwedNote, queryToString, runMatches, appliedTokens, bf16Label, compileLabel, describeExpected, fp16Label, runDurationMs, runErrorText, runExpected, runMedian, type RunMeta } from '../../common';
import { resolvePaths } from '../../core/paths';
import { runStepsCsv, runSummaryCsv, runSummaryJson } from '../../core/runs/run-csv';
import { RunStore } from '../../core/runs/run-store';
import type { DeletedRun } from '../../core/runs/delete-runs';
import type { HostRemoval } from '../../core/runs/remove-host-records';
import { matchingRuns, resolveRun } from '../../core/runs/run-select';
import { ttyConfirm } from '../tty-prompt';
import { EXIT, UsageError } from '../exit-codes';
import { parseCommandLine } from '../train-flags';
import type { CliIo } from '../io';
import { makeService } from '../service';

export const RUNS_USAGE = `usage: cohort runs list [--json] [--search WORDS] [--status S] [--engine E] [--profile P] [--tag T]
         (the filters History has: words in the name, id, tags, notes or profile; the engine that ran)
       cohort runs show RUN [--json]
       cohort runs rename RUN NAME
       cohort runs rm RUN... [--hosts [--yes]]
         (the local history; --hosts: each host's record too: events, logs, checkpoints under its workdir;
          a run a host kept, not reached, stays in the local history unless --yes or you confirm)
       cohort runs export [RUN...] [--match PREFIX] [--format csv|summary|json|jsonl] [--baseline RUN]
         (each RUN is one run: its id or a prefix only it has; --match PREFIX: every run whose id starts
          with PREFIX, oldest first; csv: one row per step; summary, json: one row per run with speedups)
       cohort stop RUN`;

function storeOf(io: CliIo): RunStore {
  return new RunStore(join(resolvePaths(io.env).dataDir, 'runs'));
}

function requireRun(store: RunStore, id: string | undefined): RunMeta {
  if (!id) throw new UsageError(`name a run (see "cohort runs list")\n${RUNS_USAGE}`);
  return resolveRun(store, id);
}

export async function runsCommand(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseCommandLine(rest, { json: { type: 'boolean' }, format: { type: 'string' }, baseline: { type: 'string' }, match: { type: 'string' }, search: { type: 'string' }, status: { type: 'string' }, engine: { type: 'string' }, profile: { type: 'string' }, tag: { type: 'string' }, hosts: { type: 'boolean' }, yes: { type: 'boolean' } });
  const store = storeOf(io);
  switch (sub) {
    case 'list': {
      // The hosts' word on runs the cache thinks are still going (run-status), through the one Api.
      const service = makeService(io);
      const query = { ...EMPTY_QUERY, text: (values.search as string | undefined) ?? '', ...Object.fromEntries((['status', 'engine', 'profile', 'tag'] as const).flatMap((k) => (typeof values[k] === 'string' ? [[k, values[k]]] : []))) };
      const runs = (await service.listRuns().finally(() => service.dispose())).filter((r) => runMatches(r, query));
      if (values.json) io.stdout.write(JSON.stringify(runs, null, 2) + '\n');
      else if (!runs.length) io.stdout.write(queryToString(query, DEFAULT_SORT) ? `no run matches (${queryToString(query, DEFAULT_SORT)}) in ${store.runsDir}\n` : `no runs recorded yet in ${store.runsDir}\n`);
      else {
        io.stdout.write(pad(['RUN', 'PROFILE', 'STATUS', 'RANKS', 'IMG/S', 'STEPS', 'TIME', 'CONFIG', 'STARTED', 'NAME']) + '\n');
        for (const m of runs) {
          const median = runMedian(m);
          const dur = runDurationMs(m);
          io.stdout.write(pad([m.id, m.profile, `${m.status}${m.stopOwed?.length ? '*' : ''}`, String(m.worldSize), median ? median.toFixed(1) : '-', String(m.steps ?? '-'), dur === null ? '-' : fmtDuration(dur), configSummary(m), m.startedAt.replace('T', ' ').slice(0, 19), [m.name ?? '', ...(m.tags ?? []).map((t) => `#${t}`)].filter(Boolean).join(' ')]) + '\n');
        }
        // A stop owed to a host that was down (this list just tried it again): marked * above, said here.
        for (const m of runs.filter((r) => r.stopOwed?.length)) io.stdout.write(`* ${m.id}: ${stopOwedNote(m, 'cli')}\n`);
      }
      return EXIT.ok;
    }
    case 'show': {
      const picked = requireRun(store, positionals[0]);
      // The hosts' word on a run the cache thinks is going (as runs list), through the one Api.
      const { meta: shown, events } = await withService(io, (service) => service.getRun(picked.id));
      store.series(shown.id); // an ended run recorded before the spread existed gets it now
      const meta = store.meta(shown.id) ?? shown;
      if (values.json) {
        io.stdout.write(JSON.stringify({ meta, events }, null, 2) + '\n');
        return EXIT.ok;
      }
      const steps = events.filter((e) => e.type === 'step');
      io.stdout.write(
        [
          ...(meta.name ? [`name: ${meta.name}`] : []),
          ...(meta.tags?.length ? [`tags: ${meta.tags.join(', ')}`] : []),
          `run ${meta.id} (${meta.status}) on profile ${meta.profile}, ${meta.worldSize} rank(s): ${meta.hosts.map((h) => `${h.name}[${h.ranks.join(',')}]${h.replaces ? ` (spare, in place of ${h.replaces})` : ''}`).join(' ')}`,
          ...(meta.excluded ?? []).map((x) => `left out: ${x.host}${x.replacement ? ` (the spare ${x.replacement} in its place)` : ''}: ${x.reason}`),
          ...(meta.stopOwed?.length ? [`stop owed: ${stopOwedNote(meta, 'cli')}`] : []),
          `started ${meta.startedAt}${meta.endedAt ? `, ended ${meta.endedAt}` : ''}`,
          `config: ${configSummary(meta)}`,
          `applied: ${[meta.applied?.engine && `engine ${meta.applied.engine}${meta.applied.backend ? `/${meta.applied.backend}` : ''}`, `compile ${compileLabel(meta)}`, `fp16 ${fp16Label(meta)}`, ...(meta.config.bf16 ? [`bf16 ${bf16Label(meta)}`] : [])].filter(Boolean).join(', ')}`,
          `median throughput: ${spreadLine(meta)}; ${steps.length} step reports`,
          ...(meta.restarts ? [`restarts: ${meta.restarts} (from the last checkpoint)`] : []),
          ...(meta.worldSize > 1 ? [`expected vs achieved: ${describeExpected(runExpected(meta, store.list()))}`] : []),
          ...(meta.error ? [`error: ${runErrorText(meta.error)}`] : []),
          `folder: ${join(store.runsDir, meta.id)}`,
          ...(meta.notes ? [`notes:\n${meta.notes.replace(/^/gm, '  ')}`] : []),
        ].join('\n') + '\n',
      );
      return EXIT.ok;
    }
    case 'rename': {
      const meta = requireRun(store, positionals[0]);
      if (positionals.length !== 2) throw new UsageError(`give the run and its new name (quote a name with spaces; "" clears it)\n${RUNS_USAGE}`);
      const named = store.rename(meta.id, positionals[1]!);
      io.stdout.write(named?.name ? `run ${meta.id} is now named ${JSON.stringify(named.name)}\n` : `run ${meta.id} has no name now\n`);
      return EXIT.ok;
    }
    case 'rm': {
      if (!positionals.length) throw new UsageError(`name the run(s) to delete\n${RUNS_USAGE}`);
      const picked = positionals.map((id) => requireRun(store, id)); // every one resolved before any is deleted
      // The one core function History's Delete uses too (Api.deleteRuns): the hosts' word on open ones first.
      const confirm = async (m: RunMeta, kept: HostRemoval[]) => !!values.yes || ((await ttyConfirm(`${kept.map((h) => h.host).join(', ')} kept run ${m.id}'s record; delete it from the local history anyway?`)) ?? false);
      const done = await withService(io, (service) => service.removeRuns(picked.map((m) => m.id), { hosts: !!values.hosts, confirm }));
      return reportRemoved(done, store.runsDir, io);
    }
    case 'export': {
      if (!positionals.length && values.match === undefined) throw new UsageError(`name at least one run, or --match PREFIX\n${RUNS_USAGE}`);
      // Ended runs get their measurements from their events once (old records): list() migrates them.
      store.list();
      const named = positionals.map((id) => requireRun(store, id));
      const matched = values.match === undefined ? [] : matchingRuns(store, values.match as string);
      const picked = [...named, ...matched.filter((m) => !named.some((n) => n.id === m.id))];
      // Each as its hosts know it (a run the cache thinks is going is asked about first).
      const metas = await withService(io, (service) => Promise.all(picked.map(async (m) => (await service.getRun(m.id)).meta)));
      const format = (values.format as string | undefined) ?? 'csv';
      const baseline = values.baseline === undefined ? undefined : requireRun(store, values.baseline as string).id;
      if (baseline !== undefined && !metas.some((m) => m.id === baseline)) throw new UsageError(`--baseline ${baseline} is not one of the exported runs; name it among the RUNs too`);
      if (baseline !== undefined && format !== 'summary' && format !== 'json') throw new UsageError('--baseline applies to --format summary and json (the per-run tables)');
      if (format === 'csv') io.stdout.write(runStepsCsv(metas.map((meta) => ({ meta, events: store.events(meta.id) }))));
      else if (format === 'summary') io.stdout.write(runSummaryCsv(metas, baseline));
      else if (format === 'json') io.stdout.write(runSummaryJson(metas, baseline, (id) => store.series(id)));
      else if (format === 'jsonl') for (const m of metas) for (const e of store.events(m.id)) io.stdout.write(JSON.stringify(e) + '\n');
      else throw new UsageError(`--format: expected csv, summary, json or jsonl, got ${JSON.stringify(format)}`);
      return EXIT.ok;
    }
    default:
      throw new UsageError(sub ? `unknown runs command "${sub}"\n${RUNS_USAGE}` : RUNS_USAGE);
  }
}

/** Each run's hosts' answers (with --hosts), then deleted or kept; exit 3 when a host was not reached, 1 when one refused or failed. */
function reportRemoved(done: DeletedRun[], runsDir: string, io: CliIo): number {
  let code: number = EXIT.ok;
  for (const { meta, deleted, hosts } of done) {
    for (const h of hosts ?? []) (h.outcome === 'removed' || h.outcome === 'absent' ? io.stdout : io.stderr).write(`${meta.id} ${h.host}: ${h.detail}\n`);
    if (deleted) {
      io.stdout.write(`deleted run ${meta.id} from ${runsDir}${hosts ? '' : " (its hosts' record is untouched; --hosts removes it too)"}\n`);
      continue;
    }
    const unreached = hosts?.some((h) => h.outcome === 'unreachable');
    io.stderr.write(`kept run ${meta.id} in ${runsDir}: ${hosts?.some((h) => h.outcome === 'refused') ? 'a host still runs it; stop it first' : `${unreached ? 'a host was not reached' : 'a host kept its record'}; run "cohort runs rm ${meta.id} --hosts" again once it is back, or add --yes to delete the local record anyway`}\n`);
    if (code === EXIT.ok || unreached) code = unreached ? EXIT.connection : EXIT.trainingFailed;
  }
  return code;
}

async function withService<T>(io: CliIo, use: (service: ReturnType<typeof makeService>) => Promise<T>): Promise<T> {
  const service = makeService(io);
  try {
    return await use(service);
  } finally {
    service.dispose();
  }
}

/** `cohort stop RUN`: stops the run through its hosts (run-stop), from any terminal; signals no client process. */
export async function stopCommand(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseCommandLine(args, {});
  const store = storeOf(io);
  const meta = requireRun(store, positionals[0]);
  const service = makeService(io);
  try {
    io.stderr.write(`stopping run ${meta.id} on its host(s)...\n`);
    let status: string;
    try {
      status = (await service.stopAndWait(meta.id)).status;
    } catch (err) {
      if ((err as { code?: string }).code !== 'run-not-active') throw err;
      io.stdout.write(`run ${meta.id} is not running (${store.meta(meta.id)?.status ?? meta.status})\n`);
      return EXIT.ok;
    }
    if (meta.profile !== 'local') {
      for (const h of await service.leftovers(meta.id, { timeoutMs: 5000 })) io.stderr.write(h.error ? `${h.host}: could not check for leftovers: ${h.error.message}\n` : h.processes.length ? `${h.host}: ${h.processes.length} process(es) of this run still running\n` : `${h.host}: nothing left running\n`);
    }
    io.stdout.write(`run ${meta.id}: ${status}\n`);
    return EXIT.ok;
  } finally {
    service.dispose();
  }
}

/** The run's setup, compile/fp16/bf16 as applied (`fp16:exchange-only`, `compile:failed`), not as asked. */
function configSummary(m: RunMeta): string {
  const c = m.config;
  return [m.applied?.engine ?? c.engine, `bs${c.batchSize}`, `${c.imageSize}px`, c.stem, ...(c.width === 1 ? [] : [`width${c.width}`]), ...(c.depth === '50' ? [] : [`resnet${c.depth}`]), ...appliedTokens(m), c.data].join(' ');
}

/** Median with the spread over the run's windows: `116.2 samples/s (IQR 112.0–118.4, min–max 98.1–121.0, 40 windows)`. */
function spreadLine(m: RunMeta): string {
  const median = runMedian(m);
  if (median === null) return '-';
  const t = m.throughput;
  const r = (v: number | null) => (v === null ? '?' : v.toFixed(1));
  return `${median.toFixed(1)} samples/s${t && t.windows ? ` (IQR ${r(t.q1)}–${r(t.q3)}, min–max ${r(t.min)}–${r(t.max)}, ${t.windows} window${t.windows === 1 ? '' : 's'})` : ''}`;
}

export function fmtDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function pad(cols: string[]): string {
  const widths = [22, 12, 10, 6, 8, 6, 7, 34, 19];
  return cols.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' ').trimEnd();
}
