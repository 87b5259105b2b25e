// Shaped links and firewalls for namespace hosts (ENV-NOTES "Shaped links and firewalls"): a tbf
// rate on both ends of one host's veth (its eth0 inside, the bridge port outside), and an nftables
// table in its namespace dropping every new inbound TCP connection except ssh. netns mode only.
import type { SshdCluster } from './sshd-hosts';
import { ip } from './netns';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync } from 'node:fs';

const execFileP = promisify(execFile);

/** The bridge-side end of host i's veth (its eth0's peer, found by interface index). */
async function outerVeth(cluster: SshdCluster, i: number): Promise<string> {
  const r = await cluster.exec(i, 'cat /sys/class/net/eth0/iflink');
  const index = r.stdout.trim();
  const links = await ip('-o', 'link');
  const line = links.split('\n').find((l) => l.startsWith(`${index}: `));
  if (!line) throw new Error(`no link with index ${index} (host ${i}'s eth0 peer)`);
  return line.split(': ')[1]!.split('@')[0]!;
}

/** Shapes host i's link both ways to `rate` (tc syntax, e.g. 50mbit); undefined removes the shaping. */
export async function shapeHost(cluster: SshdCluster, i: number, rate: string | undefined): Promise<void> {
  const veth = await outerVeth(cluster, i);
  if (rate === undefined) {
    await cluster.exec(i, 'tc qdisc del dev eth0 root 2>/dev/null; true');
    await execFileP('tc', ['qdisc', 'del', 'dev', veth, 'root']).catch(() => undefined);
    return;
  }
  const r = await cluster.exec(i, `tc qdisc replace dev eth0 root tbf rate ${rate} burst 64kb latency 50ms`);
  if (r.code !== 0) throw new Error(`tc in host ${i}: ${r.stderr}`);
  await execFileP('tc', ['qdisc', 'replace', 'dev', veth, 'root', 'tbf', 'rate', rate, 'burst', '64kb', 'latency', '50ms']);
}

/** Host i answers ssh (22) but drops every other new inbound TCP connection, as a firewall does; on=false removes the rule. */
export async function firewallHost(cluster: SshdCluster, i: number, on: boolean): Promise<void> {
  const r = on
    ? await cluster.exec(i, "nft add table inet cohort_check_test && nft 'add chain inet cohort_check_test in { type filter hook input priority 0; policy accept; }' && nft add rule inet cohort_check_test in tcp dport != 22 ct state new drop")
    : await cluster.exec(i, 'nft delete table inet cohort_check_test 2>/dev/null; true');
  if (r.code !== 0) throw new Error(`nft in host ${i}: ${r.stderr}`);
}

export const NFT_MISSING: string | undefined = existsSync("/usr/sbin/nft") ? undefined : "nftables missing: apt-get install nftables";
