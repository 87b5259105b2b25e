// Lint, including the layer map (see ARCHITECTURE.md "Layers"): each folder may import only the
// layers listed for it. The per-layer tsconfigs check the same boundary by types (no Node types
// in protocol/renderer, no DOM in Node layers); this rule checks it by import path.
import tseslint from 'typescript-eslint';

const NODE_BUILTINS = ['node:*', 'fs', 'fs/*', 'path', 'os', 'child_process', 'net', 'crypto', 'http', 'https', 'url', 'util', 'stream', 'events', 'worker_threads'];

// The tfjs engine has one front door (trainer/engine/tfjs/index.ts): from outside it, import
// '…/engine/tfjs', never a file inside it. Files inside import each other by relative paths that
// never spell engine/tfjs, so the pattern can apply everywhere.
const TFJS_INNER = { group: ['**/engine/tfjs/**'], message: "import the tfjs engine through its front door ('…/engine/tfjs', trainer/engine/tfjs/index.ts), not its inner files." };

function layer(files, message, patterns, regex, extra = [TFJS_INNER]) {
  return {
    files,
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: patterns, message }, ...(regex ? [{ regex, message }] : []), ...extra] }] },
  };
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'out/**', 'resources/**', 'bench/**', 'test-artifacts/**', 'device-kit/**', '.device-kit.*/**', '**/*.svelte'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  layer(['trainer/**'], 'the trainer runs on hosts: it may use Node and trainer/protocol, never electron, core or the renderer.', [
    'electron', 'ssh2', '**/electron/**', '**/renderer/**',
  ]),
  // After trainer/**: for protocol files the stricter map must win (later configs override).
  layer(['trainer/protocol/**'], 'trainer/protocol is the common layer: plain TypeScript only (no Node, no DOM, no other layer).', [
    ...NODE_BUILTINS, 'electron', 'ssh2', '@tensorflow/*', '../*', '!./*',
  ]),
  // The app's own contract (Api, wire, profiles): plain TypeScript like protocol, and it may import
  // only trainer/protocol (the hosts never see it, so protocol never imports it back).
  layer(['electron/common/**'], 'electron/common is the app\'s contract: plain TypeScript only (no Node, no DOM); it may import only itself and trainer/protocol.', [
    ...NODE_BUILTINS, 'electron', 'ssh2', 'ws', '@tensorflow/*', '**/electron/core/**', '**/electron/main/**', '**/electron/preload/**', '**/electron/cli/**', '**/electron/web/**', '**/renderer/**',
  ], '^\\.\\./(?!\\.\\./trainer/protocol(/[^/]+)?$)'),
  layer(['electron/core/**', 'electron/cli/**', 'electron/web/**'], 'core, cli and web are Node-only: they may import electron/common, trainer/protocol and trainer/util, never electron or the renderer.', [
    'electron', '**/renderer/**', '**/main/**', '**/preload/**',
  ]),
  layer(['electron/preload/**'], 'preload may import only electron, electron/common and trainer/protocol.', [
    ...NODE_BUILTINS, '**/core/**', '**/main/**', '**/renderer/**', 'ssh2',
  ]),
  // Everything else (tests, scripts) keeps the tfjs front door too; the kernel micro-benchmarks in
  // test/bench time the inner kernels themselves, so they alone may reach in.
  { files: ['test/**', 'electron/main/**', 'scripts/**', 'bin/**'], ignores: ['test/bench/**'], rules: { 'no-restricted-imports': ['error', { patterns: [TFJS_INNER] }] } },
  layer(['renderer/**'], 'the renderer runs in a sandboxed browser: it may import only trainer/protocol and electron/common (the Api contract), never Node or electron.', [
    ...NODE_BUILTINS, 'ssh2', '@tensorflow/*', '**/electron/core/**', '**/electron/main/**', '**/electron/preload/**', '**/electron/cli/**', '**/electron/web/**', '**/trainer/engine/**', '**/trainer/collectives/**',
  ], '^electron(/|$)'),
);
