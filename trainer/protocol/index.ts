// The common layer's public surface: the event protocol, the run configuration and the launch
// contract. Plain TypeScript, usable from the trainer, core, CLI, preload and renderer. The app's
// own contract (the Api, its wire, profiles) is in electron/common.
export * from './events';
export * from './system';
export * from './launch';
export * from './train-config';
export { DecodeError } from './validate';
export * from './lifecycle';
export * from './errors';
export * from './run-state';
export * from './slurm-job';
export * from './slow-rank';
export * from './env-switches';
export * from './timings';
export * from './expected';
export * from './resnet50-shape';
export * from './world-layout';
export * from './run-id';
export * from './run-view';
export * from './check';
export * from './core-sharing';
export * from './json-lines';
