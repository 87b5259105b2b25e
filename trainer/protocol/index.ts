// The common layer's public surface: the event protocol, the run configuration and the launch
// contract. Plain TypeScript, usable from the trainer, core, CLI, preload and renderer.
export * from './events';
export * from './launch';
export * from './train-config';
export { DecodeError } from './validate';
export * from './profile';
export * from './api';
export * from './api-wire';
export * from './run-state';
