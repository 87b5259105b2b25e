// From a profile host to what the SSH layer connects to: the endpoint plus its ProxyJump chain.
// A hop naming another host of the same profile uses that host's address, user, port and key
// (and its own ProxyJump, as OpenSSH does when the jump alias has one); other hops are literal
// `[user@]host[:port]` and borrow the target's user and key.
import { join } from 'node:path';
import { expandHome, resolvePaths, type Env } from '../paths';
import { parseProxyJump, type Profile, type ProfileHost } from '../../common';
import type { SshConnectOptions, SshEndpoint } from './connect';
import { SshError } from './ssh-error';

export interface ResolvedTarget {
  endpoint: SshEndpoint;
  /** Outermost first. */
  jump: SshEndpoint[];
}

export interface ResolveContext {
  /** Default remote user when the host gives none (OpenSSH: the local user). */
  localUser: string;
  home: string;
}

export function endpointOf(host: ProfileHost, ctx: ResolveContext): SshEndpoint {
  return {
    name: host.name,
    address: host.address,
    port: host.port,
    user: host.user ?? ctx.localUser,
    ...(host.identityFile ? { identityFile: expandHome(host.identityFile, ctx.home) } : {}),
  };
}

export function resolveTarget(profile: Pick<Profile, 'name' | 'hosts'>, hostName: string, ctx: ResolveContext): ResolvedTarget {
  const byName = new Map(profile.hosts.map((h) => [h.name, h]));
  const host = byName.get(hostName);
  if (!host) throw new SshError('ssh-protocol', hostName, `profile "${profile.name}" has no host "${hostName}"`, `hosts: ${[...byName.keys()].join(', ')}`);

  const chainOf = (h: ProfileHost, seen: string[]): SshEndpoint[] => {
    if (!h.proxyJump) return [];
    if (seen.includes(h.name)) {
      throw new SshError('ssh-jump', hostName, `profile "${profile.name}": ProxyJump loop ${[...seen, h.name].join(' → ')}`, 'remove the cycle from the proxyJump fields');
    }
    const target = endpointOf(h, ctx);
    const out: SshEndpoint[] = [];
    for (const hop of parseProxyJump(h.proxyJump, `hosts (${h.name}).proxyJump`)) {
      const named = byName.get(hop.host);
      if (named) {
        out.push(...chainOf(named, [...seen, h.name]));
        const e = endpointOf(named, ctx);
        out.push({ ...e, ...(hop.user ? { user: hop.user } : {}), ...(hop.port ? { port: hop.port } : {}) });
      } else {
        out.push({
          name: hop.host,
          address: hop.host,
          port: hop.port ?? 22,
          user: hop.user ?? target.user,
          ...(target.identityFile ? { identityFile: target.identityFile } : {}),
        });
      }
    }
    return out;
  };
  return { endpoint: endpointOf(host, ctx), jump: chainOf(host, []) };
}

/** OpenSSH's default identities, tried in this order when a host has no identityFile. */
export const DEFAULT_IDENTITY_NAMES = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

/** Connect options the composition root derives from the environment (known_hosts, agent, default identities). */
export function sshOptionsFromEnv(env: Env): Pick<SshConnectOptions, 'knownHostsPath' | 'agentSocket' | 'defaultIdentityFiles'> {
  const paths = resolvePaths(env);
  return {
    knownHostsPath: paths.knownHostsPath,
    defaultIdentityFiles: DEFAULT_IDENTITY_NAMES.map((n) => join(paths.home, '.ssh', n)),
    ...(env.SSH_AUTH_SOCK ? { agentSocket: env.SSH_AUTH_SOCK } : {}),
  };
}
