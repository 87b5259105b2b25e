// The app's own contract (VS Code's `common`: plain TypeScript, no Node, no DOM): the Api the
// dashboard and the CLI ask of core, its wire messages, and the cluster profile schema. Nothing on
// the hosts speaks these; what the trainer speaks (events, launch spec, run configuration) stays
// in trainer/protocol, the only layer this one imports.
export * from './api';
export * from './api-wire';
export * from './profile';
export * from './run-history';
export * from './csp';
export * from './run-expected';
export * from './applied-labels';
export * from './error-hints';
export * from './error-wording';
export * from './run-filter';
export * from './run-removal';
export * from './run-system';
export * from './compare-verdict';
export * from './stop-owed';
export * from './check-spares';
export * from './run-error';
