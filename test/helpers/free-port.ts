// A TCP port free right now, once for every test, harness and benchmark (the product's own is
// electron/core/runs/free-port.ts): the OS picks one for a listener on `address`, which is closed
// again before the port is returned. `address` 'any' listens on every address (Node's listen
// without a host), as the Slurm harness needs for slurmctld/slurmd; sshd-network asks per namespace
// address (127.0.0.x).
import { createServer } from 'node:net';

export function freePort(address = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    const listening = () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    };
    if (address === 'any') s.listen(0, listening);
    else s.listen(0, address, listening);
  });
}
