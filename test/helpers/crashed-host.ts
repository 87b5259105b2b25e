// A cluster host taken down for part of a test and brought back once, whichever way the test ends:
// crashHost (test/harness/sshd-hosts.ts: its link down, its sshd and every process on it SIGKILLed,
// its workdir kept), then `back()` restarts its sshd and brings its link up. Call `back()` where the
// test brings the host back and again in `finally` (a no-op once it is back):
//
//   const h1 = await crashedHost(fx().cluster, 0);
//   try { …; await h1.back(); … } finally { await h1.back(); }
import { crashHost, type SshdCluster } from '../harness/sshd-hosts';

export interface CrashedHost {
  /** When its link went down (Date.now()). */
  at: number;
  /** Restarts its sshd and brings its link up; once (later calls return at once). */
  back(): Promise<void>;
}

export async function crashedHost(cluster: SshdCluster, i: number): Promise<CrashedHost> {
  const at = await crashHost(cluster, i);
  let isBack = false;
  return {
    at,
    async back() {
      if (isBack) return;
      await cluster.restartSshd(i);
      await cluster.setLink(i, true);
      isBack = true;
    },
  };
}
