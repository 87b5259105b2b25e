// Reads the rendezvous environment (torch.distributed's names, see trainer/protocol/launch.ts)
// once, at the rank's composition root, and validates it before any socket is opened.
import { hostname } from 'node:os';
import { HOST_ENV, RENDEZVOUS_ENV } from '../protocol/launch';
import { CollectiveError } from './errors';

export interface RendezvousEnv {
  rank: number;
  worldSize: number;
  /** Where rank 0 listens for the rendezvous (an address or host name every rank can reach). */
  masterAddr: string;
  masterPort: number;
  /** This rank's host name as the profile knows it; used in error messages of peers. */
  host: string;
  localRank: number;
}

function intVar(env: NodeJS.ProcessEnv, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') {
    throw new CollectiveError('bad-env', `environment variable ${name} is not set`, {
      hint: `the launcher must set ${Object.values(RENDEZVOUS_ENV).join(', ')} for every rank process`,
    });
  }
  const text = raw.trim();
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new CollectiveError('bad-env', `${name}=${JSON.stringify(raw)} is not an integer in [${min}, ${max}]`, {
      hint: `fix the value the launcher exports as ${name}`,
    });
  }
  return value;
}

export function rendezvousEnvFromProcess(env: NodeJS.ProcessEnv): RendezvousEnv {
  const worldSize = intVar(env, RENDEZVOUS_ENV.worldSize, 1);
  const rank = intVar(env, RENDEZVOUS_ENV.rank, 0);
  if (rank >= worldSize) {
    throw new CollectiveError('bad-env', `${RENDEZVOUS_ENV.rank}=${rank} is out of range for ${RENDEZVOUS_ENV.worldSize}=${worldSize}`, {
      hint: `ranks are numbered 0..${worldSize - 1}`,
    });
  }
  const masterAddr = (env[RENDEZVOUS_ENV.masterAddr] ?? '').trim();
  if (masterAddr === '') {
    throw new CollectiveError('bad-env', `environment variable ${RENDEZVOUS_ENV.masterAddr} is not set`, {
      hint: 'set it to an address of rank 0\'s host that every rank can reach',
    });
  }
  const masterPort = intVar(env, RENDEZVOUS_ENV.masterPort, 1, 65535);
  const localRank = intVar(env, RENDEZVOUS_ENV.localRank, 0);
  // COHORT_HOST only labels errors and events; a bare `node rank.js` run falls back to the OS name.
  const host = (env[HOST_ENV] ?? '').trim() || hostname();
  return { rank, worldSize, masterAddr, masterPort, host, localRank };
}
