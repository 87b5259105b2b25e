// The device kit (scripts/device-kit.sh, issue 23), built once from this worktree for the file, then
// run where the GPU machine's limits hold: inside a new mount + network namespace (unshare -m -n)
// with no network but loopback, and the system Node hidden. Hidden means: every node/nodejs binary
// found on PATH has a stub bind-mounted over it that fails loudly (exit 127, "system node called"),
// so any use of the system Node, even by absolute path, shows in the output and fails the command;
// PATH holds only the system folders. Real processes throughout: the kit's own Node (unpacked from
// the kit), real ranks on tfjs/wasm and on Debian's CPU torch (/usr/bin/python3). The GPU is the one
// thing faked, at nvidia-smi and PYTHON (./../gpu/stand-in-gpu.ts), for the acceptance's own run.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeEvent, type CohortEvent } from '../../trainer/protocol';
import { LADDER_RUN_ORDER, SHAPE, standInGpu } from '../gpu/stand-in-gpu';
import { ROOT } from '../helpers/cli';
import { tinyRun } from '../helpers/tiny';
import { torchMissingReason } from '../helpers/torch';

const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const canNamespace = process.getuid?.() === 0 && spawnSync('unshare', ['-m', '-n', 'true']).status === 0;
const hasTorch = torchMissingReason('/usr/bin/python3') === undefined;

const work = mkdtempSync(join(tmpdir(), 'cohort-kit-test-'));
const KIT = join(work, 'kit');
const STUB = join(work, 'system-node-stub');
/** Processes still running from the kit or its runs' folders (there must be none when a test is over). */
const leftovers = (): string[] =>
  spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((l) => l.includes(work) && !l.includes('ps -eo'));
afterAll(() => {
  const left = leftovers();
  rmSync(work, { recursive: true, force: true });
  expect(left, 'processes left running').toEqual([]);
});

interface Result { code: number | null; stdout: string; stderr: string }

/** Runs `script` (bash) in a new mount + network namespace: loopback up, the system Node hidden. */
function inNamespace(script: string, env: Record<string, string>, timeoutMs: number): Promise<Result> {
  const prelude = [
    'set -e',
    'ip link set lo up',
    // Every node on PATH, by its real path (nodejs -> /etc/alternatives -> node is one file), gets the stub.
    `for n in $(PATH=${SYSTEM_PATH} which -a node nodejs 2>/dev/null | xargs -r -n1 readlink -f | sort -u); do mount --bind ${STUB} "$n"; done`,
    'if node --version >/dev/null 2>&1; then echo "the system node still runs" >&2; exit 99; fi',
    'set +e',
  ].join('\n');
  return new Promise((resolve) => {
    // Its own process group: on a timeout the whole tree (CLI, agent, ranks) is killed, not just bash.
    const child = spawn('unshare', ['-m', '-n', '--', 'bash', '-c', `${prelude}\n${script}`], { env: { PATH: SYSTEM_PATH, HOME: work, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const t = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // the group is gone already
      }
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}

const eventsOf = (stdout: string): CohortEvent[] => stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => decodeEvent(JSON.parse(l)));
const tiny = ['--ranks', '2', ...tinyRun({ width: null, batchSize: 4, steps: 2, warmupSteps: 0 }), '--json'];

describe.skipIf(!canNamespace)('the device kit, offline, with the system Node hidden', () => {
  beforeAll(() => {
    writeFileSync(STUB, '#!/bin/sh\necho "system node called: $0 $*" >&2\nexit 127\n');
    chmodSync(STUB, 0o755);
    // --no-build: the suite's global setup has just built dist/ and resources/trainer from these sources.
    const t = Date.now();
    const r = spawnSync('bash', [join(ROOT, 'scripts', 'device-kit.sh'), '--no-build', KIT], { cwd: ROOT, encoding: 'utf8', timeout: 900_000 });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const kit = JSON.parse(readFileSync(join(KIT, 'kit.json'), 'utf8'));
    console.log(`device kit: ${(kit.bytes / 2 ** 20).toFixed(1)} MiB, Node ${kit.node.version}, built in ${((Date.now() - t) / 1000).toFixed(1)} s (Node fetched and compressed once per version, cached)`);
  }, 900_000);

  it('is at most 60 MiB and holds the CLI, the trainer with the torch engine, the GPU scripts and only the CLI’s run-time packages', () => {
    const kit = JSON.parse(readFileSync(join(KIT, 'kit.json'), 'utf8'));
    expect(kit.bytes).toBeLessThanOrEqual(60 * 2 ** 20);
    for (const f of ['bin/cohort', 'bin/node', 'gpu-acceptance.sh', 'dist/cli.mjs', 'resources/trainer/cohort-trainer.mjs', 'resources/trainer/engines/torch_engine.py', 'resources/trainer/engines/train-config.json', 'scripts/gpu-acceptance.sh', 'bench/gpu/reference.py', 'bench/gpu/report.py', 'bench/gpu/checks.py', kit.node.file]) {
      expect(existsSync(join(KIT, f)), f).toBe(true);
    }
    expect(statSync(join(KIT, kit.node.file)).size).toBeLessThan(40 * 2 ** 20); // compressed: the official binary is ~95 MiB
    expect(readdirSync(join(KIT, 'node_modules')).sort()).toEqual(['asn1', 'bcrypt-pbkdf', 'nan', 'safer-buffer', 'ssh2', 'tweetnacl', 'ws']);
    expect(spawnSync('find', [KIT, '-name', '*.node'], { encoding: 'utf8' }).stdout).toBe(''); // no native addon built for this machine
  });

  it('bin/cohort run --local --ranks 2 trains 2 steps on the tfjs engine with the kit’s own Node', async () => {
    const data = join(work, 'data-tfjs');
    const r = await inNamespace(`"${KIT}/bin/cohort" run --local --engine tfjs ${tiny.join(' ')}`, { COHORT_DATA_DIR: data, COHORT_CONFIG_DIR: join(work, 'cfg') }, 300_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/system node called/);
    const events = eventsOf(r.stdout);
    expect(events.find((e) => e.type === 'hello')).toMatchObject({ engine: 'tfjs', worldSize: 2 });
    expect(events.filter((e) => e.type === 'step').map((e) => (e as { step: number }).step)).toEqual([1, 2]);
    expect(events.find((e) => e.type === 'done')).toMatchObject({ status: 'ok', steps: 2 });
    // Unpacked on first use into ~/.cache (HOME is the test's folder), never into the kit: the kit stays as built.
    expect(readdirSync(join(work, '.cache', 'cohort-kit')).filter((d) => d.startsWith('node-'))).toHaveLength(1);
    expect(readdirSync(join(KIT, 'node')).sort()).toEqual([`node-v${JSON.parse(readFileSync(join(KIT, 'kit.json'), 'utf8')).node.version}-linux-x64.sha256`, `node-v${JSON.parse(readFileSync(join(KIT, 'kit.json'), 'utf8')).node.version}-linux-x64.xz`]);
  });

  it.skipIf(!hasTorch)('…and on the torch engine (Debian’s CPU torch), from a read-only kit, no writable cache (Node unpacked into $TMPDIR, by Python’s lzma)', async () => {
    const tmp = mkdtempSync(join(work, 'tmp-'));
    const script = [`mount --bind "${KIT}" "${KIT}"`, `mount -o remount,ro,bind "${KIT}"`, `"${KIT}/bin/cohort" run --local --engine torch ${tiny.join(' ')}`].join('\n');
    const r = await inNamespace(script, { COHORT_DATA_DIR: join(work, 'data-torch'), COHORT_CONFIG_DIR: join(work, 'cfg'), TMPDIR: tmp, COHORT_KIT_UNPACK: 'python', XDG_CACHE_HOME: join(KIT, 'cache') }, 300_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/system node called/);
    const events = eventsOf(r.stdout);
    expect(events.find((e) => e.type === 'hello')).toMatchObject({ engine: 'torch', worldSize: 2 });
    expect(events.filter((e) => e.type === 'step').map((e) => (e as { step: number }).step)).toEqual([1, 2]);
    expect(events.find((e) => e.type === 'done')).toMatchObject({ status: 'ok', steps: 2 });
    expect(readdirSync(tmp).filter((d) => d.startsWith('cohort-kit-node-'))).toHaveLength(1);
  });

  it('gpu-acceptance.sh exits 77 with one line where there is no GPU', async () => {
    const r = await inNamespace(`"${KIT}/gpu-acceptance.sh"`, { OUT: join(work, 'out-77') }, 60_000);
    expect(r.code, r.stderr).toBe(77);
    expect(r.stdout).toBe('gpu-acceptance: skipped: no NVIDIA GPU on this machine (nvidia-smi not found)\n');
    expect(r.stderr).toBe('');
  });

  it('gpu-acceptance.sh runs the whole acceptance on a stand-in 1-GPU machine, offline, and writes the table to $OUT', async () => {
    const fake = mkdtempSync(join(work, 'gpu-'));
    const gpu = standInGpu(fake);
    const out = join(work, 'out-gpu');
    const r = await inNamespace(`"${KIT}/gpu-acceptance.sh"`, { PATH: `${fake}:${SYSTEM_PATH}`, PYTHON: gpu.python, OUT: out }, 600_000);
    expect([0, 1], r.stdout + r.stderr).toContain(r.code); // 1: the stand-in's events fail most checks, as they should
    expect(r.stdout + r.stderr).not.toMatch(/system node called/);
    const kit = JSON.parse(readFileSync(join(KIT, 'kit.json'), 'utf8'));
    expect(r.stdout.split('\n').slice(0, 6).filter((_, i) => i !== 4)).toEqual([
      'preflight: NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15, 9.0',
      'preflight: CUDA Version: 12.4',
      'preflight: torch 2.3.1+cu121 torchvision 0.18.1 cuda 12.1 cudnn 8902 available True',
      'preflight: nccl 2.21.5 tf32 cudnn True tf32 matmul False',
      `preflight: node v${kit.node.version} (from the device kit)`,
    ]);
    // The kit's own copies: its engine and its plain script, the same ladder as from a clone.
    const called = gpu.calls();
    expect(called.filter((c) => c[0]!.endsWith('torch_engine.py')).map((c) => [c[0], c[1], c[2]!.slice(c[0]!.length + 1)])).toEqual(
      LADDER_RUN_ORDER.map(([, extras, flags]) => [join(KIT, 'resources/trainer/engines/torch_engine.py'), extras, `${SHAPE}${flags ? ' ' + flags : ''}`]),
    );
    expect(called.filter((c) => c[0]!.endsWith('reference.py')).map((c) => c[0])).toEqual(LADDER_RUN_ORDER.map(() => join(KIT, 'bench/gpu/reference.py')));
    // Through the product, with the kit's Node: the auto-pick run, cohort check (where the build has it), --bf16, the probe.
    for (const f of ['cli-auto.jsonl', 'bf16-cli.jsonl', 'bf16-cli.exit', 'probe.txt']) expect(existsSync(join(out, f)), f).toBe(true);
    expect(existsSync(join(out, 'check.txt')) || readFileSync(join(out, 'check.skipped'), 'utf8') === "skipped: this build of cohort has no 'check' command\n").toBe(true);
    const md = readFileSync(join(out, 'gpu-nvidia-h100-80gb-hbm3.md'), 'utf8');
    expect(md.match(/^\| (fp32|channels-last|fp16|bf16|compile|all) \|/gm)).toHaveLength(6);
    expect(md).toMatch(/^tfjs engine: skipped: the device kit runs offline/m);
    expect(md).toMatch(/^\d+ passed, \d+ failed, \d+ skipped$/m);
  }, 700_000);
});
