import { describe, expect, it } from 'vitest';
import { CPU_TORCH_VERSION_PY } from './torch-files';

// Its behaviour (a CPU build read, a CUDA build imported) is pinned where it runs: electron/core/cluster/probe.test.ts
// and trainer/agent/engine-choice.test.ts. Here: what lets the probe embed it in a shell script's single quotes.
describe('CPU_TORCH_VERSION_PY', () => {
  it('has no character a single-quoted shell word or a template literal would change', () => {
    expect(CPU_TORCH_VERSION_PY).not.toMatch(/['$`\\]/);
    expect(CPU_TORCH_VERSION_PY.startsWith('def cpu_torch_version():\n')).toBe(true);
  });
});
