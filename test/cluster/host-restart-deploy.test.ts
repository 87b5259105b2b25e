// Issue 12, restart after a lost host whose trainer bundle is gone, on 3 real OpenSSH hosts
// (network namespaces), through the real `cohort` CLI. A follower host dies after a checkpoint
// (link down, sshd and every process killed) and, while it is down, its <workdir>/trainer/
// directory is removed (a re-imaged host with the workdir's runs/ restored, a cleanup job); then
// it comes back. The client must put the bundle back before `run-rejoin` (which runs from it):
// the run restarts once and ends ok with the paramChecksum of an uninterrupted run, the client's
// log says it re-deployed the bundle to h3, and nothing is left on any host.
// (The same kill with the bundle in place: host-restart.test.ts.)
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoneEvent, RestartEvent, StepEvent } from '../../trainer/protocol';
import { crashHost, harnessMode, leftovers, startHosts, trainerProcesses as trainerProcessesOn, type SshdCluster, SSHD_MISSING } from '../harness/sshd-hosts';
import { runCli, type CliRun } from '../helpers/cli';

const NETNS = !SSHD_MISSING && (await harnessMode()) === 'netns';

let cluster: SshdCluster;
let dir = '';
let env: NodeJS.ProcessEnv;
const clients: CliRun[] = [];

const tiny = ['--stem', 'cifar', '--image-size', '8', '--batch-size', '2', '--classes', '10', '--warmup-steps', '0', '--log-steps', '1', '--seed', '7'];
const fixed = ['--steps', '14', '--checkpoint-every', '3'];

function cli(args: string[], opts: { json?: boolean } = {}): CliRun {
  const r = runCli(args, { env, json: !!opts.json });
  clients.push(r);
  return r;
}

const trainerProcesses = (hosts?: number[]) => trainerProcessesOn(cluster, hosts);

async function until(what: string, fn: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  if (!NETNS) return;
  cluster = await startHosts(3);
  dir = mkdtempSync(join(tmpdir(), 'cohort-host-restart-deploy-'));
  const knownHosts = join(dir, 'known_hosts');
  copyFileSync(cluster.knownHostsPath, knownHosts);
  env = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: knownHosts, SSH_AUTH_SOCK: '' };
  const hosts = cluster.hosts.map((h) => ({ name: h.name, address: h.address, port: h.port, user: cluster.user, identityFile: cluster.clientKeyPath, slots: 1, workdir: h.workdir }));
  const file = join(dir, 'trio.json');
  writeFileSync(file, JSON.stringify({ name: 'trio', hosts }));
  const imported = cli(['profiles', 'import', file]);
  expect((await imported.exit).code, imported.stderr).toBe(0);
}, 300_000);

afterAll(async () => {
  for (const c of clients) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  const id = cluster?.id;
  await cluster?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (id) expect(await leftovers(id)).toEqual({ namespaces: [], links: [], processes: [] });
});

describe.skipIf(!NETNS)('restart after a lost host whose trainer bundle is gone, 3 real SSH hosts', () => {
  it('--max-restarts 1: h3 killed after a checkpoint, its <workdir>/trainer/ removed while down, back: the client re-deploys the bundle, the run restarts and ends ok with the uninterrupted paramChecksum, 0 processes left', async () => {
    const ref = cli(['run', '--profile', 'trio', ...fixed, ...tiny, '--json'], { json: true });
    expect((await ref.exit).code, `${ref.stderr}\n${JSON.stringify(ref.events.filter((e) => e.type === 'error' || e.type === 'done'))}`).toBe(0);
    const refSum = ref.events.find((e): e is DoneEvent => e.type === 'done')!.paramChecksum;
    expect(refSum).toMatch(/\S/);

    const run = cli(['run', '--profile', 'trio', ...fixed, ...tiny, '--max-restarts', '1', '--json'], { json: true });
    await run.waitFor((e) => e.type === 'checkpoint' && e.action === 'saved', 180_000);
    await crashHost(cluster, 2);
    const restart = (await run.waitFor((e) => e.type === 'restart', 90_000)) as RestartEvent;
    expect(restart).toMatchObject({ attempt: 1, host: 'h3', code: 'host-lost', waitingFor: ['h3'] });
    // While h3 is down its bundle goes; its workdir's runs/ (the run's spec and record) stays.
    const bundles = join(cluster.hosts[2]!.workdir, 'trainer');
    expect(existsSync(bundles), `${bundles} was deployed`).toBe(true);
    rmSync(bundles, { recursive: true, force: true });
    expect(existsSync(join(cluster.hosts[2]!.workdir, 'runs'))).toBe(true);
    await new Promise((r) => setTimeout(r, 2000));
    await cluster.restartSshd(2);
    await cluster.setLink(2, true);
    const backAt = Date.now();

    const exit = await run.exit;
    const logs = run.events.flatMap((e) => (e.type === 'log' ? [e.message] : []));
    expect(exit.code, `${run.stderr.slice(-2000)}\n${logs.slice(-20).join('\n')}`).toBe(0);
    const redeployed = run.events.find((e) => e.type === 'log' && /re-deployed the trainer bundle to h3/.test(e.message));
    expect(redeployed, logs.slice(-20).join('\n')).toBeDefined();
    expect(redeployed!.type === 'log' && redeployed!.message).toMatch(/h3 is back/);
    expect(existsSync(bundles), 'the bundle is on h3 again').toBe(true);
    const afterRestart = run.events.slice(run.events.indexOf(restart));
    expect(afterRestart.some((e) => e.type === 'checkpoint' && e.action === 'resumed' && e.step === restart.resumeStep)).toBe(true);
    const firstAfter = afterRestart.find((e): e is StepEvent => e.type === 'step')!;
    expect(firstAfter.step).toBe(restart.resumeStep + 1);
    const done = run.events.find((e): e is DoneEvent => e.type === 'done')!;
    expect(done).toMatchObject({ status: 'ok', steps: 14 });
    expect(done.paramChecksum).toBe(refSum);
    expect(run.events.filter((e) => e.type === 'restart')).toHaveLength(1);
    await until('0 processes on every host', async () => (await trainerProcesses()).length === 0, 15_000);
    process.stderr.write(`bundle gone: h3 back -> agent relaunched with the bundle re-deployed ${redeployed!.time - backAt} ms; -> first step after resume ${firstAfter.time - backAt} ms\n`);
  }, 600_000);
});
