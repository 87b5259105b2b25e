// `cohort profiles ...`: the saved cluster profiles (the same store the desktop app uses).
import { existsSync, readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { DEFAULT_WORKDIR, profileWorldSize, type ProfileHost } from '../../common';
import { resolvePaths } from '../../core/paths';
import { ProfileStore, importSshConfig } from '../../core/profiles';
import { EXIT, UsageError } from '../exit-codes';
import type { CliIo } from '../io';
import { parseCommandLine } from '../train-flags';

export const PROFILES_USAGE = `usage: cohort profiles list [--json]
       cohort profiles show NAME
       cohort profiles add NAME [USER@]ADDRESS[:PORT]... [--slots N] [--gpus 0,1] [--identity-file KEY]
                               [--proxy-jump HOST] [--workdir DIR] [--master-addr ADDR] [--force]
       cohort profiles rm NAME
       cohort profiles import FILE [--name NEW] [--force]
       cohort profiles export NAME [--out FILE]
       cohort profiles import-ssh-config NAME [--hosts ALIAS,...] [--slots N] [--workdir DIR] [--force]`;

export async function profilesCommand(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  const paths = resolvePaths(io.env);
  const store = new ProfileStore(paths.profilesDir);
  const { values, positionals } = parseCommandLine(rest, {
    json: { type: 'boolean' },
    slots: { type: 'string' },
    gpus: { type: 'string' },
    'identity-file': { type: 'string' },
    'proxy-jump': { type: 'string' },
    workdir: { type: 'string' },
    'master-addr': { type: 'string' },
    hosts: { type: 'string' },
    name: { type: 'string' },
    out: { type: 'string' },
    force: { type: 'boolean' },
  });
  const hostDefaults = (): Partial<ProfileHost> => ({
    ...(values.slots !== undefined ? { slots: Number(values.slots) } : {}),
    ...(values.gpus !== undefined ? { gpus: String(values.gpus).split(',').filter(Boolean).map(Number) } : {}),
    ...(values['identity-file'] !== undefined ? { identityFile: String(values['identity-file']) } : {}),
    ...(values['proxy-jump'] !== undefined ? { proxyJump: String(values['proxy-jump']) } : {}),
    ...(values.workdir !== undefined ? { workdir: String(values.workdir) } : {}),
  });
  switch (sub) {
    case 'list': {
      const listing = await store.list();
      if (values.json) io.stdout.write(JSON.stringify(listing, null, 2) + '\n');
      else {
        for (const p of listing.profiles) io.stdout.write(`${p.name.padEnd(20)} ${String(profileWorldSize(p)).padStart(3)} rank(s)  ${p.hosts.map((h) => `${h.name}(${h.user ? h.user + '@' : ''}${h.address}:${h.port}×${h.slots})`).join(' ')}\n`);
        for (const bad of listing.invalid) io.stderr.write(`invalid profile file ${bad.file}: ${bad.error}\n`);
      }
      return EXIT.ok;
    }
    case 'show':
      io.stdout.write(JSON.stringify(await store.get(need(positionals[0], 'NAME')), null, 2) + '\n');
      return EXIT.ok;
    case 'add': {
      const name = need(positionals[0], 'NAME');
      const targets = positionals.slice(1);
      if (!targets.length) throw new UsageError(`profiles add: give at least one host as [USER@]ADDRESS[:PORT]\n${PROFILES_USAGE}`);
      const hosts = targets.map((t, i) => {
        const m = /^(?:([^@]+)@)?(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(t);
        if (!m) throw new UsageError(`profiles add: host ${i + 1} ${JSON.stringify(t)} is not [USER@]ADDRESS[:PORT]`);
        const address = m[2]!.replace(/^\[|\]$/g, '');
        return { name: address, address, port: m[3] ? Number(m[3]) : 22, ...(m[1] ? { user: m[1] } : {}), slots: 1, workdir: DEFAULT_WORKDIR, env: {}, ...hostDefaults() };
      });
      const p = await store.put({ name, hosts, ...(values['master-addr'] ? { masterAddr: values['master-addr'] } : {}) }, { overwrite: !!values.force });
      io.stdout.write(`saved profile ${p.name} (${profileWorldSize(p)} rank(s)) in ${store.fileOf(p.name)}\n`);
      return EXIT.ok;
    }
    case 'rm': {
      const name = need(positionals[0], 'NAME');
      if (!(await store.remove(name))) throw new UsageError(`no profile named "${name}" ("cohort profiles list" shows them)`);
      io.stdout.write(`removed profile ${name}\n`);
      return EXIT.ok;
    }
    case 'import': {
      const file = need(positionals[0], 'FILE');
      if (!existsSync(file)) throw new UsageError(`profiles import: ${file} does not exist`);
      const p = await store.importFile(file, { overwrite: !!values.force, ...(values.name ? { rename: String(values.name) } : {}) });
      io.stdout.write(`imported profile ${p.name} (${profileWorldSize(p)} rank(s))\n`);
      return EXIT.ok;
    }
    case 'export': {
      const name = need(positionals[0], 'NAME');
      if (values.out) {
        await store.exportFile(name, String(values.out));
        io.stderr.write(`exported ${name} to ${values.out}\n`);
      } else io.stdout.write(JSON.stringify(await store.get(name), null, 2) + '\n');
      return EXIT.ok;
    }
    case 'import-ssh-config': {
      const name = need(positionals[0], 'NAME');
      if (!existsSync(paths.sshConfigPath)) throw new UsageError(`${paths.sshConfigPath} does not exist; nothing to import`);
      const imported = importSshConfig(readFileSync(paths.sshConfigPath, 'utf8'), {
        home: paths.home,
        localUser: userInfo().username,
        ...(values.hosts ? { only: String(values.hosts).split(',').filter(Boolean) } : {}),
      });
      for (const s of imported.skipped) io.stderr.write(`skipped ${s.what}: ${s.reason}\n`);
      const asked = values.hosts ? String(values.hosts).split(',').filter(Boolean) : [];
      const missing = asked.filter((a) => !imported.hosts.some((h) => h.name === a));
      if (missing.length) throw new UsageError(`not imported: ${missing.join(', ')} (reasons above); nothing was saved`);
      if (!imported.hosts.length) throw new UsageError(`no hosts imported from ${paths.sshConfigPath}`);
      const p = await store.put({ name, hosts: imported.hosts.map((h) => ({ ...h, ...hostDefaults() })) }, { overwrite: !!values.force });
      io.stdout.write(`saved profile ${p.name} with ${p.hosts.length} host(s) from ${paths.sshConfigPath}\n`);
      return EXIT.ok;
    }
    default:
      throw new UsageError(sub ? `unknown profiles command "${sub}"\n${PROFILES_USAGE}` : PROFILES_USAGE);
  }
}

function need(v: string | undefined, what: string): string {
  if (!v) throw new UsageError(`missing ${what}\n${PROFILES_USAGE}`);
  return v;
}
