// `cohort profiles ...`: the saved cluster profiles (the same store the desktop app uses).
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { DEFAULT_WORKDIR, profileWorldSize, type ProfileHost } from '../../common';
import { resolvePaths } from '../../core/paths';
import { ProfileStore, importSshConfigFile } from '../../core/profiles';
import { EXIT, UsageError } from '../exit-codes';
import type { CliIo } from '../io';
import type { OptionValues, Parsed } from '../command-spec';

function store(io: CliIo): ProfileStore {
  return new ProfileStore(resolvePaths(io.env).profilesDir);
}

/** Host fields given as flags (--slots, --gpus, ...), for `add` and `import-ssh-config`. */
function hostDefaults(values: OptionValues): Partial<ProfileHost> {
  return {
    ...(values.slots !== undefined ? { slots: Number(values.slots) } : {}),
    ...(values.gpus !== undefined ? { gpus: String(values.gpus).split(',').filter(Boolean).map(Number) } : {}),
    ...(values['identity-file'] !== undefined ? { identityFile: String(values['identity-file']) } : {}),
    ...(values['proxy-jump'] !== undefined ? { proxyJump: String(values['proxy-jump']) } : {}),
    ...(values.workdir !== undefined ? { workdir: String(values.workdir) } : {}),
  };
}

export async function profilesList({ values }: Parsed, io: CliIo): Promise<number> {
  const listing = await store(io).list();
  if (values.json) io.stdout.write(JSON.stringify(listing, null, 2) + '\n');
  else {
    for (const p of listing.profiles) {
      const where = p.scheduler
        ? `slurm ${p.scheduler.nodes} node(s) × ${p.scheduler.tasksPerNode}${p.scheduler.partition ? ` partition ${p.scheduler.partition}` : ''} via ${p.hosts.map((h) => `${h.user ? h.user + '@' : ''}${h.address}:${h.port}`).join(' ')}`
        : p.hosts.map((h) => `${h.name}(${h.user ? h.user + '@' : ''}${h.address}:${h.port}×${h.slots})`).join(' ');
      io.stdout.write(`${p.name.padEnd(20)} ${String(profileWorldSize(p)).padStart(3)} rank(s)  ${where}\n`);
    }
    for (const bad of listing.invalid) io.stderr.write(`invalid profile file ${bad.file}: ${bad.error}\n`);
  }
  return EXIT.ok;
}

export async function profilesShow({ positionals }: Parsed, io: CliIo): Promise<number> {
  io.stdout.write(JSON.stringify(await store(io).get(need(positionals[0], 'NAME', 'show')), null, 2) + '\n');
  return EXIT.ok;
}

export async function profilesAdd({ values, positionals }: Parsed, io: CliIo): Promise<number> {
  const name = need(positionals[0], 'NAME', 'add');
  const targets = positionals.slice(1);
  if (!targets.length) throw new UsageError('profiles add: give at least one host as [USER@]ADDRESS[:PORT], e.g. "cohort profiles add lab alice@10.0.0.5"');
  const hosts = targets.map((t, i) => {
    const m = /^(?:([^@]+)@)?(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(t);
    if (!m) throw new UsageError(`profiles add: host ${i + 1} ${JSON.stringify(t)} is not [USER@]ADDRESS[:PORT]`);
    const address = m[2]!.replace(/^\[|\]$/g, '');
    return { name: address, address, port: m[3] ? Number(m[3]) : 22, ...(m[1] ? { user: m[1] } : {}), slots: 1, workdir: DEFAULT_WORKDIR, env: {}, ...hostDefaults(values) };
  });
  const s = store(io);
  const p = await s.put({ name, hosts, ...(values['master-addr'] ? { masterAddr: String(values['master-addr']) } : {}) }, { overwrite: !!values.force });
  io.stdout.write(`saved profile ${p.name} (${profileWorldSize(p)} rank(s)) in ${s.fileOf(p.name)}\n`);
  return EXIT.ok;
}

export async function profilesAddSlurm({ values, positionals }: Parsed, io: CliIo): Promise<number> {
  const name = need(positionals[0], 'NAME', 'add-slurm');
  const target = need(positionals[1], 'LOGIN', 'add-slurm');
  const m = /^(?:([^@]+)@)?(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(target);
  if (!m) throw new UsageError(`profiles add-slurm: the login node ${JSON.stringify(target)} is not [USER@]ADDRESS[:PORT]`);
  const address = m[2]!.replace(/^\[|\]$/g, '');
  const num = (flag: string): number | undefined => {
    const v = values[flag];
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(String(v))) throw new UsageError(`profiles add-slurm: --${flag} must be a whole number, got ${JSON.stringify(v)}`);
    return Number(v);
  };
  const scheduler = {
    kind: 'slurm',
    ...(values.partition !== undefined ? { partition: String(values.partition) } : {}),
    nodes: num('nodes') ?? 1,
    tasksPerNode: num('tasks-per-node') ?? 1,
    ...(values['gpus-per-node'] !== undefined ? { gpusPerNode: num('gpus-per-node') } : {}),
    ...(values.time !== undefined ? { timeLimit: String(values.time) } : {}),
    ...(values.account !== undefined ? { account: String(values.account) } : {}),
    extraArgs: values['extra-args'] !== undefined ? String(values['extra-args']).split(/\s+/).filter(Boolean) : [],
  };
  const host = { name: 'login', address, port: m[3] ? Number(m[3]) : 22, ...(m[1] ? { user: m[1] } : {}), slots: 1, workdir: DEFAULT_WORKDIR, env: {}, ...hostDefaults(values) };
  const s = store(io);
  const p = await s.put({ name, hosts: [host], scheduler }, { overwrite: !!values.force });
  io.stdout.write(`saved Slurm profile ${p.name} (${p.scheduler!.nodes} node(s) × ${p.scheduler!.tasksPerNode} rank(s)${p.scheduler!.partition ? ` on partition ${p.scheduler!.partition}` : ''}, login ${address}) in ${s.fileOf(p.name)}\n`);
  return EXIT.ok;
}

export async function profilesRm({ positionals }: Parsed, io: CliIo): Promise<number> {
  const name = need(positionals[0], 'NAME', 'rm');
  if (!(await store(io).remove(name))) throw new UsageError(`no profile named "${name}" ("cohort profiles list" shows them)`);
  io.stdout.write(`removed profile ${name}\n`);
  return EXIT.ok;
}

export async function profilesImport({ values, positionals }: Parsed, io: CliIo): Promise<number> {
  const file = need(positionals[0], 'FILE', 'import');
  if (!existsSync(file)) throw new UsageError(`profiles import: ${file} does not exist`);
  const p = await store(io).importFile(file, { overwrite: !!values.force, ...(values.name ? { rename: String(values.name) } : {}) });
  io.stdout.write(`imported profile ${p.name} (${profileWorldSize(p)} rank(s))\n`);
  return EXIT.ok;
}

export async function profilesExport({ values, positionals }: Parsed, io: CliIo): Promise<number> {
  const name = need(positionals[0], 'NAME', 'export');
  const s = store(io);
  if (values.out) {
    await s.exportFile(name, String(values.out));
    io.stderr.write(`exported ${name} to ${values.out}\n`);
  } else io.stdout.write(JSON.stringify(await s.get(name), null, 2) + '\n');
  return EXIT.ok;
}

export async function profilesImportSshConfig({ values, positionals }: Parsed, io: CliIo): Promise<number> {
  const name = need(positionals[0], 'NAME', 'import-ssh-config');
  const paths = resolvePaths(io.env);
  const imported = await importSshConfigFile(paths.sshConfigPath, {
    home: paths.home,
    localUser: userInfo().username,
    env: io.env,
    ...(values.hosts ? { only: String(values.hosts).split(',').filter(Boolean) } : {}),
  });
  if (!imported) throw new UsageError(`${paths.sshConfigPath} does not exist; nothing to import`);
  for (const sk of imported.skipped) io.stderr.write(`skipped ${sk.what}: ${sk.reason}\n`);
  // A host asked for by name that was not imported is an error (nothing is saved), not a silent skip.
  const asked = values.hosts ? String(values.hosts).split(',').filter(Boolean) : [];
  const missing = asked.filter((a) => !imported.hosts.some((h) => h.name === a));
  if (missing.length) throw new UsageError(`not imported: ${missing.join(', ')} (reasons above); nothing was saved`);
  if (!imported.hosts.length) throw new UsageError(`no hosts imported from ${paths.sshConfigPath}`);
  const p = await store(io).put({ name, hosts: imported.hosts.map((h) => ({ ...h, ...hostDefaults(values) })) }, { overwrite: !!values.force });
  io.stdout.write(`saved profile ${p.name} with ${p.hosts.length} host(s) from ${paths.sshConfigPath}\n`);
  return EXIT.ok;
}

function need(v: string | undefined, what: string, sub: string): string {
  if (!v) throw new UsageError(`profiles ${sub}: missing ${what}; "cohort profiles ${sub} --help" shows the usage`);
  return v;
}
