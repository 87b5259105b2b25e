// A real rank process for the multi-process tests: reads the rendezvous environment like the
// trainer does, runs the scenario in COHORT_TEST_SCENARIO and reports JSON lines on stdout.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CollectiveError, connectCollective, PeerLostError, rendezvousEnvFromProcess } from '../../trainer/collectives';
import { decodeScenario, rankData, shardedStep, type Op } from './scenario';

function say(line: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify({ ...line, time: Date.now() }) + '\n');
}

function describeError(err: unknown): Record<string, unknown> {
  if (err instanceof PeerLostError) return { name: err.name, code: err.code, message: err.message, peerRank: err.peerRank, peerHost: err.peerHost, observedBy: err.observedBy, ...(err.hang ? { hang: err.hang } : {}) };
  if (err instanceof CollectiveError) return { name: err.name, code: err.code, message: err.message };
  return { name: 'Error', message: err instanceof Error ? err.message : String(err) };
}

async function runOp(c: Awaited<ReturnType<typeof connectCollective>>, op: Op, index: number, outDir: string): Promise<void> {
  const before = c.bytesSent;
  if (op.op === 'allreduce' || op.op === 'broadcast') {
    const buf = rankData(op.seed, c.rank, op.len);
    if (op.op === 'allreduce') await c.allreduce(buf, { average: op.average === true, fp16: op.fp16 === true });
    else await c.broadcast(buf, op.root);
    writeFileSync(join(outDir, `r${c.rank}-op${index}.f32`), new Uint8Array(buf.buffer));
  } else if (op.op === 'sharded') {
    const grads = rankData(op.seed, c.rank, op.len);
    const params = rankData(op.seed + 1000, 0, op.len);
    const ranges: [number, number][] = [];
    await c.shardedUpdate(grads, params, {
      average: true,
      update(start, end) {
        ranges.push([start, end]);
        shardedStep(params, grads, start, end);
      },
    });
    writeFileSync(join(outDir, `r${c.rank}-op${index}.f32`), new Uint8Array(params.buffer));
    say({ type: 'ranges', index, ranges, owned: c.ownedRange(op.len) });
  } else if (op.op === 'mismatch') {
    await c.allreduce(new Float32Array(op.len + (c.rank === op.rank ? 1 : 0)));
  } else if (op.op === 'gather') {
    const got = await c.gather({ rank: c.rank, note: `hello from ${c.rank}` }, op.root);
    say({ type: 'gathered', index, values: got ?? null });
  } else {
    await c.barrier();
  }
  say({ type: 'op', index, op: op.op, bytes: c.bytesSent - before });
}

async function main(): Promise<void> {
  const scenario = decodeScenario(JSON.parse(process.env.COHORT_TEST_SCENARIO ?? '{}'));
  let env;
  try {
    env = rendezvousEnvFromProcess(process.env);
  } catch (err) {
    say({ type: 'error', phase: 'env', ...describeError(err) });
    return;
  }
  let c;
  try {
    const transport = process.env.COHORT_TEST_TRANSPORT === 'tcp' ? 'tcp' : 'unix';
    c = await connectCollective(env, { timeoutMs: scenario.timeoutMs, peerTimeoutMs: scenario.peerTimeoutMs, sameHostTransport: transport });
  } catch (err) {
    say({ type: 'error', phase: 'connect', ...describeError(err) });
    return;
  }
  say({ type: 'connected', backend: c.backend, transport: c.transport, rank: c.rank, worldSize: c.worldSize });
  c.onFailure((err) => say({ type: 'failure', ...describeError(err) }));
  try {
    if (scenario.kind === 'ops') {
      for (const [i, op] of scenario.ops.entries()) await runOp(c, op, i, scenario.outDir);
    } else if (scenario.kind === 'abort') {
      const buf = rankData(1, c.rank, scenario.len);
      if (c.rank === 0) await c.allreduce(buf, { signal: AbortSignal.timeout(scenario.abortMs) });
      else {
        await new Promise((r) => setTimeout(r, scenario.delayMs));
        await c.allreduce(buf);
      }
    } else {
      // Loop until something fails; the test kills or stops a rank meanwhile.
      const buf = rankData(1, c.rank, scenario.len);
      for (let i = 0; ; i++) {
        await c.allreduce(buf, { average: true });
        if (i === 3) say({ type: 'looping' });
        if (i % 2 === 1) await c.barrier();
      }
    }
    await c.barrier();
    say({ type: 'done' });
  } catch (err) {
    say({ type: 'error', phase: 'op', ...describeError(err) });
    // Later ops must reject at once with the same failure.
    await c.allreduce(new Float32Array(8)).catch((later: unknown) => say({ type: 'later', ...describeError(later) }));
  } finally {
    c.dispose();
  }
}

void main();
