// Slurm extraArgs are read the way sbatch's getopt reads them (issue 22 item 16): the real sbatch
// (`-v` prints the options it parsed, before it contacts any controller) is the judge. Every word
// that sbatch reads as an option Cohort sets (-Jx, -pnosuchpart, --job=x, ...) must be refused by
// the profile decoder, and every word it reads as something else must pass. sbatch runs with a
// throwaway slurm.conf whose controller port nothing listens on, plus --test-only and --hold, so no
// job is ever submitted anywhere. Then the CLI as a process refuses such a profile on import.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SBATCH_OWNED_LONG, readSbatchWord, refusedSbatchWord } from '../../electron/common/sbatch-args';
import { runCli } from '../helpers/cli';
import { freePort } from '../helpers/free-port';

const SBATCH = '/usr/bin/sbatch';
const dir = mkdtempSync(join(tmpdir(), 'cohort-sbatch-args-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(async () => {
  const port = await freePort();
  writeFileSync(join(dir, 'slurm.conf'), `ClusterName=cohortargs\nSlurmctldHost=localhost\nSlurmctldPort=${port}\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n`);
  writeFileSync(join(dir, 'job.sh'), '#!/bin/sh\ntrue\n');
});

/** What the real sbatch makes of one word: the options it parsed, or the candidates of an ambiguous prefix.
 *  It prints them before it contacts a controller; it is stopped as soon as it has (it would retry). */
async function sbatchReads(word: string): Promise<{ parsed: string[]; ambiguous: string[]; other?: string }> {
  const child = spawn(SBATCH, ['-v', '--test-only', '--hold', word, join(dir, 'job.sh')], { env: { ...process.env, SLURM_CONF: join(dir, 'slurm.conf') }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  await new Promise<void>((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const take = (d: Buffer) => {
      out += d.toString();
      if (/end of defined options|ambiguous|unrecognized|error:/.test(out)) child.kill('SIGKILL');
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', () => {
      clearTimeout(t);
      resolve();
    });
  });
  const amb = /is ambiguous; possibilities:(.*)/.exec(out);
  if (amb) return { parsed: [], ambiguous: [...amb[1]!.matchAll(/'--([a-z-]+)'/g)].map((m) => m[1]!) };
  const block = /defined options\n[^\n]*\n([\s\S]*?)sbatch: -{5}/.exec(out);
  if (!block) return { parsed: [], ambiguous: [], other: out.trim().split('\n')[0] ?? '(nothing)' };
  const parsed = [...block[1]!.matchAll(/^sbatch: ([a-z-]+)\s+:/gm)].map((m) => m[1]!).filter((n) => !['verbose', 'test-only', 'hold'].includes(n));
  return { parsed, ambiguous: [] };
}

const WORDS = [
  // the bypasses and their kin
  '-Jx', '-pnosuchpart', '--job=x', '-vHN2', '--part=gpu', '--ntasks-per-n=2', '--par=x', '--node=2', '-t5', '--ti=5', '-Aacct', '--acc=x', '--chd=/tmp', '-oout', '--out=x', '--err=x', '--no-req', '--req', '--nodes=2', '-n4',
  // not Cohort's
  '--gpus=2', '--time-min=5', '-Ca100', '-vH', '--constraint=p', '-wnode-p1', '--exclusive', '--mem=1G', '--qos=normal', '-G1', '--gres=gpu:1',
];

describe.skipIf(!existsSync(SBATCH))("extraArgs as sbatch's getopt reads them", () => {
  for (const word of WORDS) {
    it(word, async () => {
      const s = await sbatchReads(word);
      expect(s.other, `sbatch said: ${s.other}`).toBeUndefined();
      const ownedBySbatch = s.parsed.filter((n) => n in SBATCH_OWNED_LONG);
      const couldBeOwned = s.ambiguous.some((n) => n in SBATCH_OWNED_LONG);
      const refused = refusedSbatchWord(word);
      if (ownedBySbatch.length || couldBeOwned) {
        expect(refused, `sbatch reads ${word} as ${[...ownedBySbatch, ...s.ambiguous].join(', ')}`).toBeDefined();
        if (ownedBySbatch.length) expect(readSbatchWord(word).flatMap((o) => (o.owned ? [o.owned] : []))).toEqual(ownedBySbatch);
      } else {
        expect(refused, `sbatch reads ${word} as ${s.parsed.join(', ')}`).toBeUndefined();
      }
    });
  }
});

it('cohort profiles import refuses a Slurm profile whose extraArgs hide -J (the CLI as a process)', async () => {
  const file = join(dir, 'hpc.json');
  writeFileSync(file, JSON.stringify({ name: 'hpc', scheduler: { kind: 'slurm', extraArgs: ['--constraint=a100', '-Jx'] }, hosts: [{ name: 'login', address: '127.0.0.1', user: 'me', workdir: '/tmp/w' }] }));
  const r = runCli(['profiles', 'import', file], { env: { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data') } });
  expect((await r.exit).code, r.stdout).toBe(2);
  expect(r.stderr).toContain('scheduler.extraArgs[1]: "-Jx" (sbatch reads it as --job-name=x) is set by Cohort for every run; remove it');
}, 60_000);
