// ssh2 and ws, loaded on first use instead of when the process starts. Every `cohort` command
// started by importing both (~0.09 + ~0.09 CPU-s of a ~0.30-s start, measured in session 10),
// though help, profiles, runs list and a local run need neither and only `serve` needs ws. Both
// are CommonJS packages, so a plain require at the call site loads them; the bundles keep them
// external (scripts/build.mjs, build-renderer.mjs), so this resolves from node_modules as the
// static import did.
import { createRequire } from 'node:module';
import type * as Ssh2 from 'ssh2';
import type * as Ws from 'ws';

const requireHere = createRequire(import.meta.url);
let ssh2Module: typeof Ssh2 | undefined;
let wsModule: typeof Ws | undefined;

/** The ssh2 package (Client, OpenSSHAgent, utils), loaded the first time it is asked for. */
export function loadSsh2(): typeof Ssh2 {
  return (ssh2Module ??= requireHere('ssh2') as typeof Ssh2);
}

/** The ws package (WebSocketServer), loaded the first time it is asked for. */
export function loadWs(): typeof Ws {
  return (wsModule ??= requireHere('ws') as typeof Ws);
}
