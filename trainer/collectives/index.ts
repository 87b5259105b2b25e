// The collective layer's public surface. Nothing outside trainer/collectives names a backend.
import { reduceScratchBytes } from './reduce-kernel';
import { PIECE_ELEMS } from './ring-engine';

export type { AllreduceOptions, BackendName, Collective, ConnectOptions, OpOptions, ShardedUpdateOptions } from './collective';
export { connectCollective, DEFAULT_BACKENDS } from './connect';
export { CollectiveError, PeerLostError, type CollectiveErrorCode } from './errors';
export type { ReduceHome } from './reduce-kernel';
export { rendezvousEnvFromProcess, type RendezvousEnv } from './rendezvous-env';

/** Bytes of a registered memory (Collective.registerMemory) the collective may use. */
export const COLLECTIVE_SCRATCH_BYTES = reduceScratchBytes(PIECE_ELEMS);
