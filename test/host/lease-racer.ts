// A claimer for the lease race test (lease-race.test.ts): a real process that calls the real
// claimSlots. Started as `node --import tsx lease-racer.ts RUN_ID` (the run id on its command line:
// that is how a lease's holder is judged alive). Reads `claim DIR AT_MS` lines on stdin, spins until
// the wall clock reaches AT_MS (all racers let go at the same instant), claims slot 0 of DIR and
// answers `won DIR`, `lost DIR` or `threw DIR MESSAGE`. It holds what it won until it exits.
import { createInterface } from 'node:readline';
import { claimSlots } from '../../trainer/agent/leases';

const runId = process.argv[2]!;
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const [cmd, dir, at] = line.split(' ');
  if (cmd !== 'claim' || !dir) return;
  while (Date.now() < Number(at)); // spin: a timer would let the racers go milliseconds apart
  try {
    const r = claimSlots(dir, runId, [0]);
    process.stdout.write(`${r.ok ? 'won' : 'lost'} ${dir}\n`);
  } catch (err) {
    process.stdout.write(`threw ${dir} ${(err as Error).message.replace(/\n/g, ' ')}\n`);
  }
});
process.stdout.write('ready\n');
