// The network side of test/harness/sshd-hosts.ts: one namespace per host joined by a bridge in the
// root namespace (or a point-to-point link to host 0 for private hosts), the loopback fallback's free
// ports, and the client-path cut. Every namespace, link and route is registered (netns.ts) before it
// is made, so a killed run's leftovers are removed at the next start.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { freePort } from '../helpers/free-port';
import { ip, register, reserveSubnets, type Registration } from './netns';

const execFileP = promisify(execFile);

export interface HostNetwork {
  addresses: string[];
  /** Per host: its namespace (netns mode) or undefined (loopback). */
  namespaces: (string | undefined)[];
  ports: number[];
  /** An address on the bridge where nothing answers (netns mode). */
  unusedAddress?: string;
  /** The client's (this process's) address on the bridge (netns mode). */
  clientAddress?: string;
  bridgeName?: string;
}

/** Namespaces, bridge and links for n hosts (netns mode); private hosts hang off host 0 only. */
export async function buildNamespaces(reg: Registration, sid: string, n: number, privateSet: Set<number>): Promise<HostNetwork> {
  const save = () => register(reg);
  const id = reg.id;
  const addresses: string[] = [];
  const namespaces: (string | undefined)[] = [];
  const ports: number[] = [];
  const { x, locks } = await reserveSubnets([77, 76], id);
  reg.subnetLocks.push(...locks);
  save();
  const bridge = `cbr-${sid}`;
  reg.links.push(bridge);
  save();
  await ip('link', 'add', bridge, 'type', 'bridge');
  await ip('addr', 'add', `10.77.${x}.254/24`, 'dev', bridge);
  await ip('link', 'set', bridge, 'up');
  // The private hosts' subnet must fail fast from here and never leave the machine through
  // the default route: an `unreachable` route answers EHOSTUNREACH locally.
  const route = `unreachable 10.76.${x}.0/24`;
  reg.routes.push(route);
  save();
  await ip('route', 'add', ...route.split(' '));
  for (let i = 0; i < n; i++) {
    const ns = `${id}-h${i + 1}`;
    reg.namespaces.push(ns);
    save();
    await ip('netns', 'add', ns);
    await ip('-n', ns, 'link', 'set', 'lo', 'up');
    namespaces.push(ns);
    ports.push(22);
    if (privateSet.has(i)) {
      // Point-to-point link to host 0 only: no route from here or from the other hosts.
      const a = `cx-${sid}-${i}`;
      const b = `cy-${sid}-${i}`;
      reg.links.push(a);
      save();
      await ip('link', 'add', a, 'type', 'veth', 'peer', 'name', b);
      await ip('link', 'set', a, 'netns', namespaces[0] as string);
      await ip('link', 'set', b, 'netns', ns);
      await ip('-n', namespaces[0] as string, 'addr', 'add', `10.76.${x}.1/32`, 'peer', `10.76.${x}.${i + 1}/32`, 'dev', a);
      await ip('-n', ns, 'addr', 'add', `10.76.${x}.${i + 1}/32`, 'peer', `10.76.${x}.1/32`, 'dev', b);
      await ip('-n', namespaces[0] as string, 'link', 'set', a, 'up');
      await ip('-n', ns, 'link', 'set', b, 'up');
      addresses.push(`10.76.${x}.${i + 1}`);
    } else {
      const outer = `cv-${sid}-${i}`;
      const inner = `cp-${sid}-${i}`;
      reg.links.push(outer);
      save();
      await ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner);
      await ip('link', 'set', inner, 'netns', ns);
      await ip('-n', ns, 'link', 'set', inner, 'name', 'eth0');
      await ip('-n', ns, 'addr', 'add', `10.77.${x}.${i + 1}/24`, 'dev', 'eth0');
      await ip('-n', ns, 'link', 'set', 'eth0', 'up');
      await ip('link', 'set', outer, 'master', bridge);
      await ip('link', 'set', outer, 'up');
      addresses.push(`10.77.${x}.${i + 1}`);
    }
  }
  return { addresses, namespaces, ports, unusedAddress: `10.77.${x}.200`, clientAddress: `10.77.${x}.254`, bridgeName: bridge };
}

/** Loopback fallback: sshd on 127.0.0.2, .3, ... each on a free port. */
export async function loopbackAddresses(n: number): Promise<HostNetwork> {
  const net: HostNetwork = { addresses: [], namespaces: [], ports: [] };
  for (let i = 0; i < n; i++) {
    const address = `127.0.0.${i + 2}`;
    net.addresses.push(address);
    net.namespaces.push(undefined);
    net.ports.push(await freePort(address));
  }
  return net;
}

/**
 * Cuts (up=false) or restores the path between the client and the given hosts' namespaces
 * (SshdCluster.setClientPath says how; idempotent).
 */
export async function setClientPath(bridgeName: string, clientAddress: string, hostNamespaces: string[], up: boolean): Promise<void> {
  const tc = (...args: string[]) => execFileP('tc', args, { encoding: 'utf8' });
  if (up) {
    await tc('qdisc', 'del', 'dev', bridgeName, 'root').catch(() => undefined);
    for (const ns of hostNamespaces) await ip('netns', 'exec', ns, 'tc', 'qdisc', 'del', 'dev', 'eth0', 'root').catch(() => undefined);
    return;
  }
  await tc('qdisc', 'replace', 'dev', bridgeName, 'root', 'blackhole');
  for (const ns of hostNamespaces) {
    const t = (...args: string[]) => ip('netns', 'exec', ns, 'tc', ...args);
    await t('qdisc', 'replace', 'dev', 'eth0', 'root', 'handle', '1:', 'htb', 'default', '10', 'r2q', '100000');
    await t('class', 'replace', 'dev', 'eth0', 'parent', '1:', 'classid', '1:10', 'htb', 'rate', '100gbit');
    await t('class', 'replace', 'dev', 'eth0', 'parent', '1:', 'classid', '1:20', 'htb', 'rate', '100gbit');
    await t('qdisc', 'replace', 'dev', 'eth0', 'parent', '1:20', 'handle', '20:', 'blackhole');
    await t('filter', 'replace', 'dev', 'eth0', 'parent', '1:', 'protocol', 'ip', 'prio', '1', 'u32', 'match', 'ip', 'dst', `${clientAddress}/32`, 'flowid', '1:20');
  }
}
