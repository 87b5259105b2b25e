#!/usr/bin/env node
// CPU-seconds of test files, each run alone in its own cgroup (v1 cpuacct, ENV-NOTES.md): what a file
// costs the machine, whatever the load beside it (wall seconds depend on the load; CPU-seconds barely).
// Every process the file starts (vitest's worker, sshd hosts and their sessions, agents, ranks,
// Chromium, slurmd) is a descendant of the group's first process and is counted; a process still in the
// group after vitest exits is a leftover, reported (and then ended, by its pid, so the group can go).
// Needs root (to make the cgroup) and a built tree (`npm run build` first: otherwise the global
// setup's rebuild is counted in the first file). While it runs, edit no source under trainer/,
// electron/ or renderer/ and start no other vitest in this tree: that vitest's global setup rebuilds
// resources/trainer under the running files (seen: "the trainer bundle is not built").
//   node scripts/test-cpu.mjs [--jobs N] [--slowest N] [--out FILE.md] [test files...]
// --slowest N: the N slowest slow-tier/serial files of test/file-durations.json (default 25, if no
// files are named). --jobs N: files at once (each still in its own group; default 1).
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const CPUACCT = '/sys/fs/cgroup/cpuacct';

function args() {
  const a = process.argv.slice(2);
  const opt = { jobs: 1, slowest: 0, out: '', files: [] };
  for (let i = 0; i < a.length; i++) {
    if (a[i] === '--jobs') opt.jobs = Number(a[++i]);
    else if (a[i] === '--slowest') opt.slowest = Number(a[++i]);
    else if (a[i] === '--out') opt.out = a[++i];
    else opt.files.push(a[i]);
  }
  if (opt.files.length === 0 && opt.slowest === 0) opt.slowest = 25;
  return opt;
}

/** The N slowest files outside the fast tier (the fast tier's globs: vitest.config.ts). */
function slowest(n) {
  const seconds = JSON.parse(readFileSync(join(root, 'test', 'file-durations.json'), 'utf8'));
  const fast = /^(trainer|electron|renderer)\/|^test\/(build|collectives|gpu|ssh)\/|^test\/harness\/sshd-hosts|^test\/torch\/torch-config|^test\/local\/cli-conventions/;
  return Object.entries(seconds)
    .filter(([f]) => !fast.test(f))
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([f]) => f);
}

const read = (group, name) => Number(readFileSync(join(group, name), 'utf8').trim());
const procs = (group) => readFileSync(join(group, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);

async function measure(file, i) {
  const group = join(CPUACCT, `cohort-test-cpu-${process.pid}-${i}`);
  mkdirSync(group);
  const report = join('/tmp', `cohort-test-cpu-${process.pid}-${i}.json`);
  const started = Date.now();
  // The shell joins the group before it becomes vitest, so nothing the file starts escapes it.
  const child = spawn('sh', ['-c', `echo $$ > ${group}/cgroup.procs && exec npx vitest run "$1" --reporter=json --outputFile="$2"`, 'sh', file, report], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  const code = await new Promise((res) => child.on('exit', (c) => res(c)));
  const wall = (Date.now() - started) / 1000;
  // Give a file's own cleanup (detached children told to stop) a moment, then count what is left.
  await new Promise((r) => setTimeout(r, 2000));
  const left = procs(group);
  const cmdOf = (pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').slice(0, 80);
    } catch {
      return '?';
    }
  };
  const leftovers = left.map((p) => `${p} ${cmdOf(p)}`);
  const cpu = read(group, 'cpuacct.usage') / 1e9;
  const user = read(group, 'cpuacct.usage_user') / 1e9;
  const sys = read(group, 'cpuacct.usage_sys') / 1e9;
  for (const p of left) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      /* gone meanwhile */
    }
  }
  for (let t = 0; t < 50 && procs(group).length > 0; t++) await new Promise((r) => setTimeout(r, 100));
  try {
    rmdirSync(group);
  } catch (e) {
    console.error(`${group}: not removed (${e.message}); remove it by hand once its processes are gone`);
  }
  let tests = '?';
  if (existsSync(report)) {
    const r = JSON.parse(readFileSync(report, 'utf8'));
    tests = `${r.numPassedTests}/${r.numTotalTests}`;
  }
  if (code !== 0) console.error(`${file}: vitest exited ${code}\n${stderr}`);
  return { file, wall, cpu, user, sys, tests, code, leftovers };
}

const opt = args();
const files = opt.files.length ? opt.files : slowest(opt.slowest);
const results = [];
let next = 0;
await Promise.all(
  Array.from({ length: Math.max(1, opt.jobs) }, async () => {
    while (next < files.length) {
      const i = next++;
      const r = await measure(files[i], i);
      results[i] = r;
      console.log(`${r.file}: ${r.cpu.toFixed(1)} CPU-s (user ${r.user.toFixed(1)}, sys ${r.sys.toFixed(1)}) in ${r.wall.toFixed(1)} s wall, ${r.tests} passed${r.leftovers.length ? `, LEFTOVERS: ${r.leftovers.join('; ')}` : ''}`);
    }
  }),
);

const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
const lines = [
  `| file | CPU-s | user | sys | wall (s) | CPU-s / wall | tests passed | leftovers |`,
  `|---|---|---|---|---|---|---|---|`,
  ...results.map((r) => `| ${r.file} | ${r.cpu.toFixed(1)} | ${r.user.toFixed(1)} | ${r.sys.toFixed(1)} | ${r.wall.toFixed(1)} | ${(r.cpu / r.wall).toFixed(2)} | ${r.tests} | ${r.leftovers.length || ''} |`),
  `| **sum** | **${results.reduce((s, r) => s + r.cpu, 0).toFixed(0)}** | | | ${results.reduce((s, r) => s + r.wall, 0).toFixed(0)} | | | |`,
  '',
  `${opt.jobs} file(s) at once; 1-min load at the end ${load}.`,
];
console.log(lines.join('\n'));
if (opt.out) (existsSync(opt.out) ? appendFileSync : writeFileSync)(opt.out, lines.join('\n') + '\n');
process.exitCode = results.some((r) => r.code !== 0 || r.leftovers.length) ? 1 : 0;
