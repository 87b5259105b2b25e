// The tfjs engine's front door: what orchestration (trainer/train, the benches) may use. Nothing
// outside engine/tfjs imports its inner files (lint: eslint.config.js); README.md beside this file
// maps the rooms (conv/, kernels/, model/) and which kernel serves which layer.
export { BackendUnavailableError, GpuRequiredError, initBackend, tfjsCapabilities, type BackendInfo, type InitBackendOptions } from './backend';
export { applyCompilePlan, compileClock, compileTrainStep, cpuMs, type CompileProgress, type CompileReport, type CompileSample } from './compile';
export { createResNet50, initialParamsParallel, type ResNetOptions, type TfjsResNet } from './model/resnet50';
export { initThreads } from './model/init-rng';
export { resnet50Spec, type NetSpec } from './model/resnet50-spec';
export { gemmInfo } from './kernels/gemm-kernels';
export { TensorBytesPeak } from './peak-bytes';
