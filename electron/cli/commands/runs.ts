// `cohort runs list|show|export` and `cohort stop RUN`: the run history under the data dir.
import { join } from 'node:path';
import type { RunMeta } from '../../common';
import { resolvePaths } from '../../core/paths';
import { runStepsCsv, runSummaryCsv } from '../../core/runs/run-csv';
import { RunIdError, RunStore, isValidRunId } from '../../core/runs/run-store';
import { EXIT, UsageError } from '../exit-codes';
import { parseCommandLine } from '../train-flags';
import type { CliIo } from '../io';
import { makeService } from '../service';

export const RUNS_USAGE = `usage: cohort runs list [--json]
       cohort runs show RUN [--json]
       cohort runs export RUN... [--format csv|summary|jsonl]   (csv: one row per step; summary: one row per run with speedups)
       cohort stop RUN`;

function storeOf(io: CliIo): RunStore {
  return new RunStore(join(resolvePaths(io.env).dataDir, 'runs'));
}

function requireRun(store: RunStore, id: string | undefined): RunMeta {
  if (!id) throw new UsageError(`name a run (see "cohort runs list")\n${RUNS_USAGE}`);
  if (!isValidRunId(id)) throw new UsageError(new RunIdError(id).message);
  const meta = store.meta(id) ?? store.list().find((m) => m.id.startsWith(id));
  if (!meta) throw new UsageError(`no run "${id}" in ${store.runsDir}; "cohort runs list" shows the recorded runs`);
  return meta;
}

export async function runsCommand(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseCommandLine(rest, { json: { type: 'boolean' }, format: { type: 'string' } });
  const store = storeOf(io);
  switch (sub) {
    case 'list': {
      // The hosts' word on runs the cache thinks are still going (run-status), through the one Api.
      const service = makeService(io);
      const runs = await service.listRuns().finally(() => service.dispose());
      if (values.json) io.stdout.write(JSON.stringify(runs, null, 2) + '\n');
      else if (!runs.length) io.stdout.write(`no runs recorded yet in ${store.runsDir}\n`);
      else {
        io.stdout.write(pad(['RUN', 'PROFILE', 'STATUS', 'RANKS', 'IMG/S', 'STEPS', 'CONFIG', 'STARTED']) + '\n');
        for (const m of runs) io.stdout.write(pad([m.id, m.profile, m.status, String(m.worldSize), m.medianGlobalSamplesPerSec ? m.medianGlobalSamplesPerSec.toFixed(1) : '-', String(m.steps ?? '-'), configSummary(m), m.startedAt.replace('T', ' ').slice(0, 19)]) + '\n');
      }
      return EXIT.ok;
    }
    case 'show': {
      const meta = requireRun(store, positionals[0]);
      const events = store.events(meta.id);
      if (values.json) {
        io.stdout.write(JSON.stringify({ meta, events }, null, 2) + '\n');
        return EXIT.ok;
      }
      const steps = events.filter((e) => e.type === 'step');
      io.stdout.write(
        [
          `run ${meta.id} (${meta.status}) on profile ${meta.profile}, ${meta.worldSize} rank(s): ${meta.hosts.map((h) => `${h.name}[${h.ranks.join(',')}]`).join(' ')}`,
          `started ${meta.startedAt}${meta.endedAt ? `, ended ${meta.endedAt}` : ''}`,
          `config: ${configSummary(meta)}`,
          `median throughput: ${meta.medianGlobalSamplesPerSec ? meta.medianGlobalSamplesPerSec.toFixed(1) + ' samples/s' : '-'}; ${steps.length} step reports`,
          ...(meta.error ? [`error: ${meta.error}`] : []),
          `folder: ${join(store.runsDir, meta.id)}`,
        ].join('\n') + '\n',
      );
      return EXIT.ok;
    }
    case 'export': {
      if (!positionals.length) throw new UsageError(`name at least one run\n${RUNS_USAGE}`);
      const metas = positionals.map((id) => requireRun(store, id));
      const format = (values.format as string | undefined) ?? 'csv';
      if (format === 'csv') io.stdout.write(runStepsCsv(metas.map((meta) => ({ meta, events: store.events(meta.id) }))));
      else if (format === 'summary') io.stdout.write(runSummaryCsv(metas));
      else if (format === 'jsonl') for (const m of metas) for (const e of store.events(m.id)) io.stdout.write(JSON.stringify(e) + '\n');
      else throw new UsageError(`--format: expected csv, summary or jsonl, got ${JSON.stringify(format)}`);
      return EXIT.ok;
    }
    default:
      throw new UsageError(sub ? `unknown runs command "${sub}"\n${RUNS_USAGE}` : RUNS_USAGE);
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
    try {
      await service.stopRun(meta.id);
    } catch (err) {
      if ((err as { code?: string }).code !== 'run-not-active') throw err;
      io.stdout.write(`run ${meta.id} is not running (${store.meta(meta.id)?.status ?? meta.status})\n`);
      return EXIT.ok;
    }
    if (meta.profile !== 'local') {
      for (const h of await service.leftovers(meta.id, { timeoutMs: 5000 })) io.stderr.write(h.error ? `${h.host}: could not check for leftovers: ${h.error.message}\n` : h.processes.length ? `${h.host}: ${h.processes.length} process(es) of this run still running\n` : `${h.host}: nothing left running\n`);
    }
    io.stdout.write(`run ${meta.id}: ${store.meta(meta.id)?.status ?? 'unknown'}\n`);
    return EXIT.ok;
  } finally {
    service.dispose();
  }
}

function configSummary(m: RunMeta): string {
  const c = m.config;
  return `${c.engine} bs${c.batchSize} ${c.imageSize}px ${c.stem}${c.compile ? ' compile' : ''}${c.fp16 ? ' fp16' : ''}${c.bf16 ? ' bf16' : ''} ${c.data}`;
}

function pad(cols: string[]): string {
  const widths = [22, 12, 10, 6, 8, 6, 34, 19];
  return cols.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' ').trimEnd();
}
