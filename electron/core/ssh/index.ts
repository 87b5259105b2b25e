// The SSH layer: the only place that imports ssh2.
export { HostSession, sha256File, type ExecOptions, type ExitStatus, type HostSessionOptions, type RemoteProcess, type RunResult, type UploadOptions, type UploadResult } from './host-session';
export { shQuote } from './remote-shell';
export { connectChain, connectOne, DEFAULT_CONNECT_TIMEOUT_MS, type ConnectedClient, type HostKeyInfo, type SshConnectOptions, type SshEndpoint } from './connect';
export { SshError, classifySshError, describeHost, type SshErrorCode } from './ssh-error';
export { KeyRing, type PassphraseProvider, type PassphraseRequest } from './keys';
export { addKnownHost, checkHostKey, fingerprintSha256, hashHostName, hostFieldMatches, keyTypeOf, knownHostsName, parseKnownHosts, readKnownHosts, type HostKeyCheck, type KnownHostEntry } from './known-hosts';
export { connectMany, createLimiter, type ConnectManyResult, type Limiter } from './limiter';
export { endpointOf, resolveTarget, sshOptionsFromEnv, type ResolveContext, type ResolvedTarget } from './endpoints';
export { fetchHostKey, trustPresentedHostKey, type PresentedHostKey } from './host-key-fetch';
