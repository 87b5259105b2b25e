// A claimer for the lease race test (lease-race.test.ts): a real process that calls the real
// claimSlots. Started as `node --import tsx lease-racer.ts RUN_ID` (the run id on its command line:
// that is how a lease's holder is judged alive). Reads `claim DIR AT_MS` lines on stdin, waits until
// the wall clock reaches AT_MS (all racers let go at the same instant), claims slot 0 of DIR and
// answers `won DIR`, `lost DIR` or `threw DIR MESSAGE`. It holds what it won until it exits.
import { createInterface } from 'node:readline';
import { claimSlots } from '../../trainer/agent/leases';

const runId = process.argv[2]!;
const lines = createInterface({ input: process.stdin });
// A timer until SPIN_MS before the instant, then a spin: a timer alone would let the racers go
// milliseconds apart; a spin of the whole wait (150 ms a trial) cost 6 racers ~29 CPU-s on 2 cores.
const SPIN_MS = 3;
lines.on('line', (line) => {
  const [cmd, dir, at] = line.split(' ');
  if (cmd !== 'claim' || !dir) return;
  setTimeout(() => claim(dir, Number(at)), Math.max(0, Number(at) - SPIN_MS - Date.now()));
});

function claim(dir: string, at: number): void {
  while (Date.now() < at); // spin the last milliseconds: all racers let go at one instant
  try {
    const r = claimSlots(dir, runId, [0]);
    process.stdout.write(`${r.ok ? 'won' : 'lost'} ${dir}\n`);
  } catch (err) {
    process.stdout.write(`threw ${dir} ${(err as Error).message.replace(/\n/g, ' ')}\n`);
  }
}
process.stdout.write('ready\n');
