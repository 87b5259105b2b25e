// Human output of a run, in the seeds' format: step lines on stdout, everything about progress
// (hello, warm-up, compile, agent messages, rank 0's log) on stderr; --json prints raw events.
import { formatStepLine, type CohortEvent, type RankMemory } from '../../trainer/protocol';

export interface Printer {
  event(e: CohortEvent): void;
}

export function jsonPrinter(out: NodeJS.WritableStream): Printer {
  return { event: (e) => out.write(JSON.stringify(e) + '\n') };
}

export function humanPrinter(out: NodeJS.WritableStream, err: NodeJS.WritableStream, opts: { verbose?: boolean } = {}): Printer {
  return {
    event(e) {
      switch (e.type) {
        case 'hello': {
          const caps = Object.entries(e.capabilities)
            .map(([k, c]) => `  ${k}: ${c.available ? 'yes' : 'no'} — ${c.detail}`)
            .join('\n');
          err.write(`engine ${e.engine}, backend ${e.backend} on ${e.device}, ${e.params.toLocaleString('en-US')} params, ${e.worldSize} rank(s)\n${e.reason ? `  why: ${e.reason}\n` : ''}${caps}\n`);
          if (e.deviceWarning) err.write(`WARNING: NOT ON A GPU: ${e.deviceWarning}\n`);
          break;
        }
        case 'plan': {
          err.write(`plan: ${e.worldSize} rank(s) on ${[...new Set(e.ranks.map((r) => r.host))].join(', ')}, global batch ${e.globalBatch}, ${e.steps} steps${e.epochs ? ` (${e.epochs} epochs of ${e.stepsPerEpoch})` : ''}, data ${e.data}\n`);
          // The device each rank really uses (one line per distinct device, so 64 identical ranks stay one line).
          const byDevice = new Map<string, number[]>();
          for (const r of e.ranks) if (r.device) byDevice.set(`${r.host}: ${r.device}${r.gpuFellBack ? ' (asked for a GPU: ON THE CPU)' : ''}`, [...(byDevice.get(`${r.host}: ${r.device}${r.gpuFellBack ? ' (asked for a GPU: ON THE CPU)' : ''}`) ?? []), r.rank]);
          for (const [d, ranks] of byDevice) err.write(`  rank${ranks.length > 1 ? 's' : ''} ${ranks.join(',')} on ${d}\n`);
          break;
        }
        case 'step':
          out.write(formatStepLine(e) + '\n');
          out.write(`  memory: ${e.memory.map(formatMemory).join(' | ')}\n`);
          break;
        case 'epoch':
          out.write(`Epoch ${e.epoch} done: train loss ${e.trainLoss?.toFixed(4) ?? 'nan'}${e.valAccuracy !== undefined ? `, val loss ${e.valLoss?.toFixed(4)}, val accuracy ${(e.valAccuracy * 100).toFixed(2)}%` : ''} (${(e.durationMs / 1000).toFixed(1)} s)\n`);
          break;
        case 'warmup':
          err.write(`warm-up: ${e.steps} step(s) in ${(e.durationMs / 1000).toFixed(1)} s, not counted in throughput\n`);
          break;
        case 'compile':
          err.write(`compile (${e.name}): ${e.status}, ${(e.durationMs / 1000).toFixed(1)} s${e.speedup ? `, step ${e.baselineStepMs?.toFixed(0)} → ${e.compiledStepMs?.toFixed(0)} ms (${e.speedup.toFixed(2)}×)` : ''} — ${e.detail}\n`);
          break;
        case 'checkpoint':
          err.write(`checkpoint ${e.action} at step ${e.step}: ${e.path}\n`);
          break;
        case 'log':
          // Rank 0 and the agents narrate progress; other ranks' output is kept in the run's log files.
          if (opts.verbose || e.rank === undefined || e.rank === 0 || e.level !== 'info') err.write(`${e.host ? `[${e.host}${e.rank !== undefined ? `:${e.rank}` : ''}] ` : ''}${e.message}\n`);
          break;
        case 'error':
          err.write(`error: ${e.rank >= 0 ? `rank ${e.rank} on ${e.host}` : e.host}: ${e.message}\n`);
          if (e.logTail.length) err.write(`  last log lines:\n${e.logTail.slice(-10).map((l) => `    ${l}`).join('\n')}\n`);
          break;
        case 'done':
          err.write(`done: ${e.status}, ${e.steps} steps${e.medianGlobalSamplesPerSec !== null ? `, median ${e.medianGlobalSamplesPerSec.toFixed(1)} samples/s` : ''}${e.paramChecksum ? `, weights sha256 ${e.paramChecksum.slice(0, 16)}…` : ''}, ${(e.durationMs / 1000).toFixed(1)} s\n`);
          break;
        case 'memory':
          break;
      }
    },
  };
}

export function formatBytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  return `${(n / 2 ** 20).toFixed(0)} MiB`;
}

function formatMemory(m: RankMemory): string {
  const parts = [`rank ${m.rank}@${m.host} rss ${formatBytes(m.rssBytes)}`];
  if (m.tensorBytes !== undefined) parts.push(`tensors ${formatBytes(m.tensorBytes)}`);
  // The rank's own process on its GPU next to the device total; else the whole device's use, said as such.
  if (m.gpuProcessBytes !== undefined) parts.push(`gpu ${formatBytes(m.gpuProcessBytes)} (this rank)${m.gpuTotalBytes !== undefined ? ` of ${formatBytes(m.gpuTotalBytes)}` : ''}`);
  else if (m.gpuUsedBytes !== undefined && m.gpuTotalBytes !== undefined) parts.push(`gpu device ${formatBytes(m.gpuUsedBytes)}/${formatBytes(m.gpuTotalBytes)} used`);
  if (m.peakTensorBytes !== undefined) parts.push(`peak ${formatBytes(m.peakTensorBytes)}`);
  return parts.join(' ');
}
