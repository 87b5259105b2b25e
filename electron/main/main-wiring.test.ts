// Electron main's wiring, read from its source: the Electron binary is not on the test machines
// (nothing here can start main.ts), so this is the thinnest check there is that the desktop app's
// SshCluster gets the client's waits from the environment as the CLI and `cohort serve` do
// (readClusterTimings: core/cluster/client-timings.ts, whose results client-timings.test.ts proves).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const main = readFileSync(new URL('./main.ts', import.meta.url), 'utf8');

describe('electron/main/main.ts', () => {
  it('reads the client timings from process.env and refuses a bad value before building the service', () => {
    expect(main).toMatch(/const \{ options: (\w+), invalid \} = readClusterTimings\(process\.env\);/);
    expect(main).toMatch(/if \(invalid\.length\) \{\s*dialog\.showErrorBox\('Cohort cannot start', `\$\{invalid\.join\('\\n'\)\}[^`]*`\);\s*app\.exit\(2\);\s*return;\s*\}/);
  });

  it('gives them to its SshCluster', () => {
    const name = /const \{ options: (\w+), invalid \} = readClusterTimings/.exec(main)?.[1];
    expect(main).toContain(`new SshCluster({ env: process.env, ...${name}, `);
  });
});
