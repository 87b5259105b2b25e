// The fixture the cluster tests share: real sshd hosts (test/harness/sshd-hosts.ts), a private
// config/data dir and known_hosts for the `cohort` CLI, profiles imported through the CLI, the
// bundle deployed, every client the file started killed at the end, and the end checked for
// leftovers (namespaces, links, processes). One call in a file:
//
//   const fx = useCohortCluster(3, { profiles: { trio: [0, 1, 2] }, deploy: 'trio' });
//   it('…', async () => { const run = fx().cli(['run', '--profile', 'trio', ...tinyRun()], { json: true }); … });
//
// Each file starts its own hosts, so files never see each other's crashed hosts, cut links or stray
// runs. Measured (session 8, loaded: bench/results/suite.md, "session 8, fixture costs"): 3 hosts
// 0.8–1.6 s, dispose 0.4–0.5 s, `cohort deploy` 3.3–3.6 s: sharing would need a reset between files
// (runs, records, workdirs, sshd, links) costing about a start, for ~2 s a file: not built (test/README.md).
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { leftovers, startHosts, trainerProcesses, type SshdCluster, type StartHostsOptions } from '../harness/sshd-hosts';
import { runCli, type CliRun } from './cli';

/** A profile's host: its index in the cluster, or the index with fields the profile adds (env, slots, python...). */
export type ProfileHost = number | ({ host: number } & Record<string, unknown>);

export interface CohortClusterOptions extends StartHostsOptions {
  /** Profiles to import: name → hosts in order (the first leads). */
  profiles?: Record<string, ProfileHost[]>;
  /** A profile to `cohort deploy` after the import. */
  deploy?: string;
  /** Extra env of every CLI this fixture runs (e.g. COHORT_LOST_AFTER_MS). */
  clientEnv?: NodeJS.ProcessEnv;
  /** slots of each host when a profile does not say (default 1). */
  slots?: number;
}

export interface CohortCluster {
  cluster: SshdCluster;
  /** The private directory: config/, data/, known_hosts, profile files. */
  dir: string;
  /** The CLI's env: COHORT_CONFIG_DIR, COHORT_DATA_DIR, COHORT_KNOWN_HOSTS (a copy), no ssh-agent. */
  env: NodeJS.ProcessEnv;
  /** Runs the real CLI with this env (plus opts.env); killed at the end if still running. */
  cli(args: string[], opts?: { json?: boolean; env?: NodeJS.ProcessEnv }): CliRun;
  /** Writes a profile file and imports it through the CLI (fails the test if the import fails). */
  importProfile(name: string, hosts: ProfileHost[], fields?: Record<string, unknown>): Promise<void>;
  /** The profile host entry for host i (address, port, user, key, workdir, slots). */
  hostEntry(i: number, extra?: Record<string, unknown>): Record<string, unknown>;
  trainerProcesses(hosts?: number[]): Promise<string[]>;
  /** Kills the clients, restores the client path, disposes the hosts, removes the dir; returns what was left. */
  dispose(): Promise<Awaited<ReturnType<typeof leftovers>>>;
}

export async function startCohortCluster(n: number, opts: CohortClusterOptions = {}): Promise<CohortCluster> {
  const cluster = await startHosts(n, opts);
  const dir = mkdtempSync(join(tmpdir(), 'cohort-cluster-'));
  const knownHosts = join(dir, 'known_hosts');
  copyFileSync(cluster.knownHostsPath, knownHosts);
  const env: NodeJS.ProcessEnv = { COHORT_CONFIG_DIR: join(dir, 'config'), COHORT_DATA_DIR: join(dir, 'data'), COHORT_KNOWN_HOSTS: knownHosts, SSH_AUTH_SOCK: '', ...opts.clientEnv };
  const clients: CliRun[] = [];
  const hostEntry = (i: number, extra: Record<string, unknown> = {}) => {
    const h = cluster.hosts[i]!;
    return { name: h.name, address: h.address, port: h.port, user: cluster.user, identityFile: cluster.clientKeyPath, slots: opts.slots ?? 1, workdir: h.workdir, ...extra };
  };
  const fx: CohortCluster = {
    cluster,
    dir,
    env,
    cli(args, o = {}) {
      const r = runCli(args, { env: { ...env, ...o.env }, json: !!o.json });
      clients.push(r);
      return r;
    },
    async importProfile(name, hosts, fields = {}) {
      const file = join(dir, `${name}.json`);
      writeFileSync(file, JSON.stringify({ name, ...fields, hosts: hosts.map((h) => (typeof h === 'number' ? hostEntry(h) : (({ host, ...extra }) => hostEntry(host, extra))(h))) }));
      const imported = fx.cli(['profiles', 'import', file]);
      expect((await imported.exit).code, imported.stderr).toBe(0);
    },
    hostEntry,
    trainerProcesses: (hosts) => trainerProcesses(cluster, hosts),
    async dispose() {
      for (const c of clients) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
      await cluster.setClientPath(true).catch(() => undefined);
      await cluster.dispose();
      rmSync(dir, { recursive: true, force: true });
      return leftovers(cluster.id);
    },
  };
  try {
    for (const [name, hosts] of Object.entries(opts.profiles ?? {})) await fx.importProfile(name, hosts);
    if (opts.deploy) {
      const deployed = fx.cli(['deploy', opts.deploy]);
      expect((await deployed.exit).code, deployed.stderr).toBe(0);
    }
  } catch (err) {
    await fx.dispose();
    throw err;
  }
  return fx;
}

/**
 * startCohortCluster in beforeAll (skipped when `enabled` is false: no sshd, no netns), dispose in
 * afterAll with the leftovers check. Returns a getter: call it inside tests and hooks.
 */
export function useCohortCluster(n: number, opts: CohortClusterOptions & { enabled?: boolean } = {}): () => CohortCluster {
  let fx: CohortCluster | undefined;
  beforeAll(async () => {
    if (opts.enabled === false) return;
    fx = await startCohortCluster(n, opts);
  }, 300_000);
  afterAll(async () => {
    if (fx) expect(await fx.dispose()).toEqual({ namespaces: [], links: [], processes: [] });
  });
  return () => {
    if (!fx) throw new Error('the cohort cluster fixture is not started (use it inside a test or a hook after beforeAll)');
    return fx;
  };
}
