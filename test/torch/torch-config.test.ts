// The torch engine's run configuration comes from the one table (TRAIN_CONFIG_TABLE): the build
// writes train-config.json beside the bundled script, and Python's DEFAULTS, types and flags must
// agree with the table row by row. Without the JSON the engine refuses to start, saying why.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { COMPILE_MODES, DEFAULT_TRAIN_CONFIG, TRAIN_ROWS, decodeEvent, torchEngineConfigJson } from '../../trainer/protocol';
import { ENGINE_SCRIPT, PYTHON, torchUnavailableReason } from './engine-process';

const skipReason = torchUnavailableReason();
if (skipReason) console.warn(`torch config tests skipped: ${skipReason}`);

/** Imports the engine module (no training: main() is not called) and reports its config view on the event stream. */
const PROBE = `
import json, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]))
from cohort_torch import events, config, defaults
m = config
events._event_out.write(json.dumps({
    "defaults": defaults.DEFAULTS,
    "types": {k: type(v).__name__ for k, v in defaults.DEFAULTS.items()},
    "flags": {k: "--" + m.kebab(k) for k in defaults.DEFAULTS},
    "loaded": m.load_config([]),
    "epochsAlone": m.load_config(["--epochs", "2"]),
    "compileModes": list(m.COMPILE_MODES),
}) + "\\n")
`;

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe.skipIf(!!skipReason)('torch engine config: the table is the source', () => {
  it('train-config.json in the bundle is the table', () => {
    const written = JSON.parse(readFileSync(join(ENGINE_SCRIPT, '..', 'train-config.json'), 'utf8')) as unknown;
    expect(written).toEqual(torchEngineConfigJson());
  });

  it("Python's DEFAULTS, value types and flag names agree with every row", () => {
    const r = spawnSync(PYTHON, ['-c', PROBE, ENGINE_SCRIPT], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, COHORT_TRAIN_CONFIG: '' } });
    expect(r.status, r.stderr).toBe(0);
    const view = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
      defaults: Record<string, unknown>;
      types: Record<string, string>;
      flags: Record<string, string>;
      loaded: Record<string, unknown>;
      epochsAlone: Record<string, unknown>;
      compileModes: string[];
    };
    expect(view.defaults).toEqual(DEFAULT_TRAIN_CONFIG);
    expect(view.loaded).toEqual(DEFAULT_TRAIN_CONFIG);
    const pyType = { int: 'int', float: 'float', bool: 'bool', enum: 'str', string: 'str' } as const;
    for (const row of TRAIN_ROWS) {
      expect(view.types[row.key], row.key).toBe(pyType[row.kind]);
      expect(view.flags[row.key], row.key).toBe(row.flag);
    }
    // The budget rule means the same on both sides: --epochs alone replaces the step budget.
    expect(view.epochsAlone).toMatchObject({ epochs: 2, steps: 0 });
    // The engine refuses a mode itself (run standalone); the table refuses it at the CLI and the form.
    expect(view.compileModes).toEqual([...COMPILE_MODES]);
  });

  it('refuses to start without train-config.json, naming the file and the fix', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-torch-nocfg-'));
    dirs.push(dir);
    const script = join(dir, 'torch_engine.py');
    cpSync(join(ENGINE_SCRIPT, '..'), dir, { recursive: true });
    rmSync(join(dir, 'train-config.json'));
    const r = spawnSync(PYTHON, [script, '--steps', '1'], { encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(1);
    const events = r.stdout.trim().split('\n').filter(Boolean).map((l) => decodeEvent(JSON.parse(l)));
    const err = events.find((e) => e.type === 'error');
    expect(err).toMatchObject({ type: 'error', code: 'config' });
    expect(err && 'message' in err ? err.message : '').toMatch(/train-config\.json.*npm run build/);
  });
});

// The agent takes a CPU-only torch on its files' word (trainer/agent/engine-choice.ts, enginesReportImport),
// so the engine is where a torch that does not import is reported: an error event, not a bare traceback.
// A stand-in torch package whose import fails as a missing shared library would; no real torch needed.
describe.skipIf(!existsSync(PYTHON))('torch engine: a torch that does not import', () => {
  it('is an engine-unavailable error event naming the interpreter, the import error and what to do; exit 1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-torch-broken-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'torch'));
    writeFileSync(join(dir, 'torch', '__init__.py'), "raise ImportError('libtorch_cpu.so: cannot open shared object file: No such file or directory')\n");
    const r = spawnSync(PYTHON, [ENGINE_SCRIPT, '--steps', '1'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, PYTHONPATH: dir, COHORT_TRAIN_CONFIG: '' } });
    expect(r.status, r.stderr).toBe(1);
    const lines = r.stdout.trim().split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    const err = decodeEvent(JSON.parse(lines[0]!));
    expect(err).toMatchObject({ type: 'error', code: 'engine-unavailable', rank: 0 });
    const e = err as Extract<typeof err, { type: 'error' }>;
    expect(e.message).toBe(`--engine torch: ${PYTHON} cannot import torch (ImportError: libtorch_cpu.so: cannot open shared object file: No such file or directory)`);
    expect(e.hint).toMatch(/fix or reinstall PyTorch for \/usr\/bin\/python3 .*-c 'import torch' shows the error/);
    expect(r.stderr).toMatch(/Traceback[\s\S]*ImportError: libtorch_cpu\.so/); // the whole traceback in the rank's log
  });
});
