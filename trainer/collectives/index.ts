// The collective layer's public surface. Nothing outside trainer/collectives names a backend.
export type { AllreduceOptions, BackendName, Collective, ConnectOptions, OpOptions } from './collective';
export { connectCollective, DEFAULT_BACKENDS } from './connect';
export { CollectiveError, PeerLostError, type CollectiveErrorCode } from './errors';
export { FusionBuffer } from './fusion-buffer';
export { rendezvousEnvFromProcess, type RendezvousEnv } from './rendezvous-env';
