// What SshCluster asks of one host's HostSession beyond its own methods: the session as the
// deployer's DeployTarget, and a free TCP port found on the host itself. Apart from ssh-cluster.ts,
// which keeps the sessions and what a profile's hosts do together.
import type { HostSession } from '../ssh';
import type { DeployTarget } from './deploy';

/** One host's session as the deployer sees it (deploy.ts knows nothing of SSH). */
export function deployTarget(s: HostSession): DeployTarget {
  return {
    name: s.name,
    exec: async (command, opts) => {
      const r = await s.run(command, opts ?? {});
      return { code: r.code, stdout: r.stdout, stderr: r.stderr };
    },
    upload: async (local, remote, opts) => {
      // The whole bundle is checked with one sha256sum on the host after the upload, and its
      // directories are made with one mkdir -p before it (deploy.ts).
      await s.upload(local, remote, { skipIfSame: false, verify: false, makeDir: false, ...(opts?.onProgress ? { onProgress: (sent: number) => opts.onProgress!(sent) } : {}), ...(opts?.signal ? { signal: opts.signal } : {}) });
    },
  };
}

/** A free TCP port on the master host, asked of the host itself (its firewall and its other jobs). */
export async function remoteFreePort(s: HostSession): Promise<number> {
  const r = await s.run(`node -e "const s=require('net').createServer();s.listen(0,()=>{process.stdout.write(String(s.address().port));s.close()})"`);
  const port = Number(r.stdout.trim());
  if (!Number.isInteger(port) || port <= 0) throw new Error(`${s.name}: could not find a free port for the rendezvous (${r.stderr.trim()}); set masterPort in the profile`);
  return port;
}
