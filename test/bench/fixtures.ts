// What each slow-tier test fixture costs a file to start and stop (issue 25, "shared fixtures"):
// the parts the fixture helpers run, one after another, ROUNDS times, medians:
//  - useCohortCluster(3, { profiles, deploy }): startHosts(3), `cohort profiles import`, `cohort
//    deploy` (the bundle copied to 3 hosts), dispose + leftovers;
//  - startSlurmCluster() (munge, slurmctld, 2 slurmd, until sinfo says idle), dispose;
//  - useDashboard: `cohort serve` start (until it prints its URL), Chromium launched as the helper
//    does (launchPersistentContext) + first page, and against that: a browser already running
//    (launchServer) reached by connect() + a fresh context + page, the cost a file would pay with one
//    Chromium per worker;
// and how many slow-tier files pay each (grep of test/**/*.test.ts for the helper's name).
//   npm run bench -- fixtures [--rounds 5]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { harnessMode, leftovers, startHosts } from '../harness/sshd-hosts';
import { SLURM_MISSING, startSlurmCluster } from '../harness/slurm-cluster';
import { CHROMIUM, CHROMIUM_ARGS, startServe } from '../e2e/serve-process';
import { ROOT, countOption, median, writeResults } from './bench-util';

const ROUNDS = countOption('rounds', 5);
const rows: { part: string; ms: number[] }[] = [];
const load: number[] = [];

async function timed<T>(part: string, f: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const v = await f();
  const ms = performance.now() - t0;
  let row = rows.find((r) => r.part === part);
  if (!row) rows.push((row = { part, ms: [] }));
  row.ms.push(ms);
  return v;
}

function cli(args: string[], env: NodeJS.ProcessEnv): void {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'cohort.mjs'), ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cohort ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
}

/** Slow-tier test files whose source names `needle` (the tier: vitest.config.ts's FAST_TEST_FILES left out by hand: test/build, collectives, gpu, ssh, harness). */
function filesUsing(needle: RegExp): number {
  const r = spawnSync('grep', ['-rlE', needle.source, 'test', '--include=*.test.ts'], { cwd: ROOT, encoding: 'utf8' });
  return r.stdout.split('\n').filter((f) => f && !/^test\/(build|collectives|gpu|ssh|harness)\//.test(f)).length;
}

const netns = (await harnessMode()) === 'netns';
for (let round = 0; round < ROUNDS; round++) {
  load.push(loadavg()[0]!);
  if (netns) {
    const cluster = await timed('sshd: startHosts(3)', () => startHosts(3));
    const dir = mkdtempSync(join(tmpdir(), 'cohort-bench-fx-'));
    const env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: cluster.knownHostsPath, SSH_AUTH_SOCK: '' };
    const profile = join(dir, 'trio.json');
    writeFileSync(profile, JSON.stringify({ name: 'trio', hosts: cluster.hosts.map((h) => ({ name: h.name, address: h.address, port: h.port, user: cluster.user, identityFile: cluster.clientKeyPath, slots: 1, workdir: h.workdir })) }));
    await timed('sshd: `cohort profiles import` (1 profile)', async () => cli(['profiles', 'import', profile], env));
    await timed('sshd: `cohort deploy` (bundle to 3 hosts)', async () => cli(['deploy', 'trio'], env));
    // Not a fixture part: the same deploy again, the bundle already there (connects + hash checks only).
    await timed('(sshd: `cohort deploy` again, bundle already there)', async () => cli(['deploy', 'trio'], env));
    await timed('(`cohort --version`: the CLI start alone)', async () => cli(['--version'], env));
    await timed('sshd: dispose + leftovers', async () => {
      await cluster.dispose();
      const left = await leftovers(cluster.id);
      if (left.namespaces.length + left.links.length + left.processes.length) throw new Error(`leftovers: ${JSON.stringify(left)}`);
    });
    rmSync(dir, { recursive: true, force: true });
  }
  if (!SLURM_MISSING) {
    const slurm = await timed('Slurm: startSlurmCluster() (2 nodes idle)', () => startSlurmCluster());
    await timed('Slurm: dispose', () => slurm.dispose());
  }
  const serve = await timed('serve: `cohort serve` start (URL printed)', () => startServe());
  const profileDir = mkdtempSync(join(tmpdir(), 'cohort-bench-chromium-'));
  const ctx = await timed('Chromium: launchPersistentContext (per file today)', () =>
    chromium.launchPersistentContext(profileDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1280, height: 800 } }),
  );
  const page = await timed('Chromium: first page + goto serve.url', async () => {
    const p = await ctx.newPage();
    await p.goto(serve.url);
    return p;
  });
  await page.close();
  await timed('Chromium: close (per file today)', () => ctx.close());
  rmSync(profileDir, { recursive: true, force: true });
  // One Chromium per worker instead: launched once (not per file), each file connect()s.
  const server = await chromium.launchServer({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const browser = await timed('shared Chromium: connect() (per file)', () => chromium.connect(server.wsEndpoint()));
  const shared = await timed('shared Chromium: newContext + page + goto', async () => {
    const c = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await (await c.newPage()).goto(serve.url);
    return c;
  });
  await timed('shared Chromium: context close + disconnect (per file)', async () => {
    await shared.close();
    await browser.close();
  });
  await server.close();
  await timed('serve: dispose (SIGTERM, exit)', () => serve.dispose());
}

const ms = (v: number[]) => (median(v) / 1000).toFixed(2);
const counts = {
  sshd: filesUsing(/useCohortCluster|startHosts\(/),
  slurm: filesUsing(/startSlurmCluster\(/),
  deploy: filesUsing(/deploy: '|\['deploy'/),
  dash: filesUsing(/useDashboard\(|openDashboard\(/),
};
const payers = (part: string) => (part.startsWith('(') ? 0 : part.includes('deploy') ? counts.deploy : part.startsWith('sshd') ? counts.sshd : part.startsWith('Slurm') ? counts.slurm : counts.dash);
const table = rows.map((r) => `| ${r.part} | ${ms(r.ms)} | ${(Math.min(...r.ms) / 1000).toFixed(2)}–${(Math.max(...r.ms) / 1000).toFixed(2)} | ${payers(r.part)} | ${((median(r.ms) * payers(r.part)) / 1000).toFixed(1)} |`);
const md = [
  '### Fixture costs per test file',
  '',
  `${new Date().toISOString()}, ${ROUNDS} rounds, load average ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)} (1 min) on ${readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm)?.length ?? '?'} cores: LOADED (other sessions' suites running).`,
  '',
  '| part | median s | range s | slow-tier files paying it | files × median s |',
  '|---|---|---|---|---|',
  ...table,
].join('\n');
writeResults('fixtures', { rounds: ROUNDS, load, counts, rows }, md);
