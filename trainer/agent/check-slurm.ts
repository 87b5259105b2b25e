// `cohort check` on a Slurm profile (issue 21): the same host checks inside one short allocation on
// the nodes a run would get. Two commands of the deployed bundle, daemon-free:
//   `check-slurm` (on the login node): SlurmCheckRequest on stdin → one `srun` (job name
//     cohort-check-<id>, the run's partition, node count and extraArgs, --immediate so a full
//     partition is an answer rather than a wait, a short --time) of `check-slurm-node` on every
//     node; then it reads what the nodes wrote in W/slurm-check/<id>/, removes that directory and
//     prints one SlurmCheckReply line. The allocation is srun's own: it is released when srun exits;
//     SIGINT/SIGTERM/SIGHUP (the client gone or cancelling) scancel it by name first.
//   `check-slurm cancel --id ID`: scancel of that allocation (the client's Ctrl-C; idempotent).
//   `check-slurm-node --dir D` (one task per node): this node's `check-host` and its clock against
//     the login node's (check-slurm serves its clock on a TCP port; the node reaches it at
//     SLURM_SRUN_COMM_HOST, as srun's own I/O does), then plain TCP along the ring the run's ranks
//     would form — every node listens on a free port (as a run's ranks do), the hops i → i+1
//     stream one after another (ordered through the shared directory), the middle nodes also reach
//     node 0's port (the rendezvous) — then, when asked, one rank of the config (`check-compute`)
//     alone, and the ranks that share one machine's cores all at once (computeOnNode). Each part
//     is the SSH check's own host command, run as a child.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import type { Writable } from 'node:stream';
import { promisify } from 'node:util';
import type { ComputeReport, HostCheckReport, LinkSendReport, NodeClock, SlurmCheckReply, SlurmCheckRequest } from '../protocol/check';
import { lastJson, type HostCmdError } from '../protocol';
import { coreSharing } from '../protocol/core-sharing';
import { writeFileAtomicSync } from '../util/atomic-write';
import { HostCmdFailure, firstStdinLine, parseFlags, replyLine, sleep } from './host-cmd';
import { nodeAddress } from './slurm';
import { spareNodes } from './slurm-spares';

const execFileP = promisify(execFile);
const checkJobName = (id: string): string => `cohort-check-${id}`;
const checkDir = (workdir: string, id: string): string => `${workdir.replace(/\/+$/, '')}/slurm-check/${id}`;
const ID = /^[A-Za-z0-9_-]{1,64}$/;
/** How long a node waits for its peers' files (they start at once; a node's check-host may take a while). */
const PEER_WAIT_MS = 120_000;
/** A one-rank measurement's limit (check-compute). */
const COMPUTE_MS = 240_000;

export async function checkSlurm(argv: readonly string[], o: { trainerEntry: string; workdir: string }): Promise<number> {
  if (argv[0] === 'cancel') {
    const id = parseFlags(argv.slice(1), ['id'], 'check-slurm cancel').id ?? '';
    if (!ID.test(id)) throw new HostCmdFailure('usage', 'check-slurm cancel --id ID', 3);
    await scancel(id);
    replyLine({ cancelled: checkJobName(id) });
    return 0;
  }
  const line = await firstStdinLine();
  let req: SlurmCheckRequest;
  try {
    req = JSON.parse(line ?? '') as SlurmCheckRequest;
    if (!ID.test(req.id) || !Number.isInteger(req.nodes) || req.nodes < 1 || !Array.isArray(req.srunArgs)) throw new Error('id, nodes and srunArgs are required');
  } catch (err) {
    throw new HostCmdFailure('bad-spec', `check-slurm: bad request: ${(err as Error).message}`, 3);
  }
  const dir = checkDir(o.workdir, req.id);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const clock = await clockServer().catch(() => undefined);
  // The clock's addresses for the nodes: srun's own (SLURM_SRUN_COMM_HOST, in the step), then the one this SSH session came in on.
  const sshServer = process.env.SSH_CONNECTION?.split(' ')[2];
  writeFileAtomicSync(`${dir}/request.json`, JSON.stringify({ ...req, ...(clock ? { clock: { port: clock.port, addresses: sshServer ? [sshServer] : [] } } : {}) }) + '\n', { mode: 0o600 });
  const args = [
    `--job-name=${checkJobName(req.id)}`,
    `--nodes=${req.nodes}`,
    `--ntasks=${req.nodes}`,
    '--ntasks-per-node=1',
    `--time=${req.timeLimitMin}`,
    `--immediate=${req.queueWaitS}`,
    '--kill-on-bad-exit=0',
    ...req.srunArgs,
    process.execPath,
    o.trainerEntry,
    'check-slurm-node',
    '--dir',
    dir,
  ];
  const srun = spawn('srun', args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, COHORT_WORKDIR: o.workdir } });
  let err = '';
  srun.stderr.setEncoding('utf8').on('data', (c: string) => (err = (err + c).slice(-8000)));
  srun.stdout.resume();
  // The client gone (SSH channel closed: SIGHUP) or cancelling: the allocation goes first, then srun.
  let cancelled = false;
  const onSignal = () => {
    cancelled = true;
    void scancel(req.id).finally(() => srun.kill('SIGKILL'));
  };
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, onSignal);
  const code = await new Promise<number | null>((resolve) => {
    srun.on('error', (e) => {
      err += e.message;
      resolve(null);
    });
    srun.on('exit', (c) => resolve(c));
  });
  clock?.close();
  const reply = collect(dir, req);
  const jobId = reply.jobId ?? /job (\d+)/.exec(err)?.[1];
  rmSync(dir, { recursive: true, force: true });
  if (cancelled) reply.error = { code: 'cancelled', message: `the check's allocation ${checkJobName(req.id)} was cancelled` };
  else if (!reply.nodes.length || code !== 0) {
    const words = err.split('\n').map((l) => l.replace(/^srun: (error: )?/, '').trim()).filter((l) => l && !/^job \d+ queued|^Job \d+ step creation|^Step created/.test(l));
    const unavailable = /Unable to allocate resources|immediate|Requested node configuration is not available|not available/i.test(err);
    if (!reply.nodes.length || !words.length || unavailable) reply.error = { code: unavailable ? 'slurm-no-allocation' : 'slurm-check-failed', message: `srun ${code === null ? 'could not run' : `exited ${code}`}: ${words.slice(-3).join(' | ') || 'no output'}` };
  }
  // The partition's other usable nodes now (bad node out: what could take a node's place, slurm-spares.ts).
  const spares = reply.nodes.length && !reply.error ? await spareNodes(req.srunArgs, reply.nodes.map((n) => n.node)) : undefined;
  replyLine({ ...reply, ...(jobId ? { jobId } : {}), ...(spares ? { spares } : {}), timeMs: Date.now() });
  return 0;
}

/** The login node's clock for the nodes (their offsets): each "T" line is answered with this clock's time in ms. */
async function clockServer(): Promise<{ port: number; close: () => void }> {
  const sockets = new Set<Socket>();
  const server = createServer((sock) => {
    sockets.add(sock);
    sock.setNoDelay(true);
    sock.on('error', () => undefined);
    sock.on('close', () => sockets.delete(sock));
    let buf = '';
    sock.setEncoding('utf8').on('data', (c: string) => {
      buf += c;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        buf = buf.slice(nl + 1);
        sock.write(`${performance.timeOrigin + performance.now()}\n`);
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, () => resolve());
  });
  const a = server.address();
  return {
    port: typeof a === 'object' && a ? a.port : 0,
    close: () => {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}

/** Everything the nodes wrote (a node that wrote nothing is absent: the client names it from Slurm's node list). */
function collect(dir: string, req: SlurmCheckRequest): SlurmCheckReply {
  const read = <T>(f: string): T | undefined => {
    try {
      return JSON.parse(readFileSync(`${dir}/${f}`, 'utf8')) as T;
    } catch {
      return undefined;
    }
  };
  const files = existsSync(dir) ? readdirSync(dir) : [];
  const nodes = files.filter((f) => /^node-\d+\.json$/.test(f)).map((f) => read<SlurmCheckReply['nodes'][number] & { jobId?: string }>(f)).filter((x) => !!x).sort((a, b) => a.index - b.index);
  const links = files.filter((f) => /^(hop|rdv)-\d+\.json$/.test(f)).map((f) => read<SlurmCheckReply['links'][number]>(f)).filter((x) => !!x);
  const compute = req.compute ? read<NonNullable<SlurmCheckReply['compute']>>('compute.json') : undefined;
  const shared = files.filter((f) => /^share-\d+-\d+\.json$/.test(f)).map((f) => read<NonNullable<SlurmCheckReply['shared']>[number]>(f)).filter((x) => !!x);
  return { nodes: nodes.map(({ jobId: _j, ...n }) => n), links, ...(compute ? { compute } : {}), ...(shared.length ? { shared } : {}), ...(nodes[0]?.jobId ? { jobId: nodes[0].jobId } : {}) };
}

async function scancel(id: string): Promise<void> {
  await execFileP('scancel', [`--name=${checkJobName(id)}`], { timeout: 15_000 }).catch(() => undefined);
}

/**
 * This node's children (check-host, the listener, a sender, check-compute). scancel signals the task
 * (SIGTERM, later SIGKILL): proctrack/linuxproc does not find a child once its parent is gone, so
 * the task ends its children itself before it exits (the Slurm test saw a listener outlive scancel).
 */
const children = new Set<ChildProcess>();
function endChildrenOnSignal(): void {
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(s, () => {
      for (const c of children) c.kill('SIGKILL');
      process.exit(143);
    });
  }
}

/** One node's part, inside the allocation's step. */
export async function checkSlurmNode(argv: readonly string[], o: { trainerEntry: string }): Promise<number> {
  endChildrenOnSignal();
  const dir = parseFlags(argv, ['dir'], 'check-slurm-node').dir ?? '';
  const i = Number(process.env.SLURM_NODEID);
  const n = Number(process.env.SLURM_JOB_NUM_NODES ?? process.env.SLURM_NNODES);
  const node = process.env.SLURMD_NODENAME ?? '';
  if (!dir || !Number.isInteger(i) || !Number.isInteger(n) || !node) {
    process.stderr.write('check-slurm-node: runs only inside a Slurm job step (SLURM_NODEID, SLURM_JOB_NUM_NODES, SLURMD_NODENAME) with --dir\n');
    return 2;
  }
  const req = JSON.parse(readFileSync(`${dir}/request.json`, 'utf8')) as SlurmCheckRequest;
  const workdir = `${dir}/node-${i}`;
  mkdirSync(workdir, { recursive: true, mode: 0o700 });
  const run = (args: string[], stdin?: string, timeoutMs = 90_000) => child(o.trainerEntry, args, workdir, stdin, timeoutMs);
  const address = await nodeAddress(node);
  const host = await run(['check-host', '--engine', req.engine, ...(req.python ? ['--python', req.python] : [])]);
  const report = lastJson<HostCheckReport & Partial<HostCmdError>>(host.stdout);
  const ok = report && !report.error && report.v === 1;
  let clock: NodeClock | undefined;
  for (const at of req.clock ? [...new Set([process.env.SLURM_SRUN_COMM_HOST, ...req.clock.addresses].filter((x): x is string => !!x))] : []) {
    clock = await clockAgainstLogin(at, req.clock!.port);
    if (clock && 'offsetMs' in clock) break;
  }
  if (req.clock && !clock) clock = { error: { code: 'clock-unreachable', message: 'no address of the login node to reach (SLURM_SRUN_COMM_HOST unset)' } };
  writeFileAtomicSync(`${dir}/node-${i}.json`, JSON.stringify({ index: i, node, address, jobId: process.env.SLURM_JOB_ID, ...(clock ? { clock } : {}), ...(ok ? { report } : { error: { code: report?.error?.code ?? 'check-host-failed', message: `check-host failed (exit ${host.code}): ${report?.error?.message ?? (host.stderr.trim().split('\n').pop() || 'no answer')}`, ...(report?.error?.hint ? { hint: report.error.hint } : {}) } }) }) + '\n');

  // Links: every node listens (node 0 also serves the rendezvous connections of the middle nodes).
  if (n >= 2) {
    const expect = 1 + (i === 0 ? Math.max(0, n - 2) : 0);
    const listenMs = n * (req.linkMs + 12_000) + PEER_WAIT_MS;
    const listener = spawn(process.execPath, [o.trainerEntry, 'check-link', 'listen', '--port', '0', '--expect', String(expect), '--timeout-ms', String(listenMs)], { cwd: workdir, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(listener);
    const listened = new Promise<void>((r) => listener.on('exit', () => r(void children.delete(listener))));
    const port = await new Promise<number>((resolve) => {
      let out = '';
      listener.stdout.setEncoding('utf8').on('data', (c: string) => {
        out += c;
        const j = lastJson<{ port?: number; error?: unknown }>(out.split('\n')[0] + '\n');
        if (j?.port) resolve(j.port);
        else if (j?.error) resolve(0);
      });
      void listened.then(() => resolve(0));
    });
    writeFileAtomicSync(`${dir}/listen-${i}.json`, JSON.stringify({ node, address, port }) + '\n');
    const peer = async (k: number) => (await waitFile<{ node: string; address: string; port: number }>(`${dir}/listen-${k}.json`)) ?? { node: `node ${k}`, address: '', port: 0 };
    const hopMs = (n + 1) * (req.linkMs + 60_000);
    // Every sender starts at once, connects and times its round trips (a rendezvous connection is
    // only that); a ring sender (--start stdin) then streams on "GO": node 0 once every node's
    // senders are ready, node i once hop i-1 is written — the hops one after another (as in the
    // SSH check: nodes sharing CPUs would measure the CPU), no process start during a stream.
    const start = async (to: number, kind: 'ring' | 'rendezvous', file: string) => {
      const p = await peer(to);
      const sender = p.port ? startChild(o.trainerEntry, ['check-link', 'send', '--to', p.address, '--port', String(p.port), '--ms', String(kind === 'ring' ? req.linkMs : 0), ...(kind === 'ring' ? ['--start', 'stdin'] : [])], workdir, hopMs) : undefined;
      if (kind === 'rendezvous') sender?.stdin.end();
      const finish = async () => {
        sender?.stdin.end(kind === 'ring' ? 'GO\n' : '');
        const r: LinkSendReport = sender
          ? (lastJson<LinkSendReport>((await sender.done).stdout) ?? { ok: false, error: { code: 'no-answer', message: 'check-link send gave no answer' } })
          : { ok: false, error: { code: 'listen-failed', message: `${p.node} did not listen on a TCP port` } };
        writeFileAtomicSync(`${dir}/${file}`, JSON.stringify({ from: node, to: p.node, kind, port: p.port, report: r }) + '\n');
      };
      return { ready: kind === 'ring' ? sender?.ready : sender?.done, finish };
    };
    const ring = await start((i + 1) % n, 'ring', `hop-${i}.json`);
    const rdv = i >= 1 && i <= n - 2 ? await start(0, 'rendezvous', `rdv-${i}.json`) : undefined;
    await Promise.all([ring.ready, rdv?.ready]);
    await rdv?.finish();
    writeFileAtomicSync(`${dir}/ready-${i}.json`, '{}\n');
    if (i === 0) for (let k = 0; k < n; k++) await waitFile(`${dir}/ready-${k}.json`, hopMs);
    else await waitFile(`${dir}/hop-${i - 1}.json`, hopMs);
    await ring.finish();
    // Every hop told (or given up on): a listener whose peer never connected (a firewall) ends now, not at its timeout.
    const all = [...Array.from({ length: n }, (_, k) => `hop-${k}.json`), ...Array.from({ length: Math.max(0, n - 2) }, (_, k) => `rdv-${k + 1}.json`)];
    for (const f of all) await waitFile(`${dir}/${f}`, hopMs);
    listener.kill();
    await listened;
  }

  if (req.compute && ok) await computeOnNode(req.compute, { dir, i, n, node, cores: report.cores, python: req.python, run });
  return 0;
}

/**
 * One rank of the planned config, after the links (it would skew them), as the SSH check does: alone
 * on node 0, or, when ranks share one machine's cores (core-sharing.ts, from every node's check-host
 * file), alone on that machine's first node and then every one of its ranks at once (a run's
 * step time there), started together once the alone measurement is written.
 */
async function computeOnNode(c: NonNullable<SlurmCheckRequest['compute']>, o: { dir: string; i: number; n: number; node: string; cores: number; python: string | undefined; run: (args: string[], stdin?: string, timeoutMs?: number) => Promise<{ code: number | null; stdout: string; stderr: string }> }): Promise<void> {
  const tasks = Math.max(1, c.tasksPerNode);
  const threads = Math.max(1, Math.floor(o.cores / tasks));
  const measure = async (): Promise<ComputeReport> => {
    const r = await o.run(['check-compute', '--threads', String(threads), ...(o.python ? ['--python', o.python] : [])], JSON.stringify(c.config) + '\n', COMPUTE_MS);
    return lastJson<ComputeReport>(r.stdout) ?? { ok: false, error: { code: 'no-answer', message: r.stderr.trim().split('\n').pop() ?? `exit ${r.code}` } };
  };
  const peers = await Promise.all(Array.from({ length: o.n }, (_, k) => waitFile<{ node: string; report?: HostCheckReport }>(`${o.dir}/node-${k}.json`)));
  const sharing = coreSharing(peers.flatMap((p) => (p?.report ? [{ host: p.node, bootId: p.report.bootId, cores: p.report.cores, ranks: tasks }] : [])));
  const first = sharing ? peers.findIndex((p) => p?.node === sharing.hosts[0]) : 0;
  if (o.i === first && (c.alone !== false || sharing)) writeFileAtomicSync(`${o.dir}/compute.json`, JSON.stringify({ ...(await measure()), node: o.node, threads }) + '\n');
  if (!sharing?.hosts.includes(o.node)) return;
  if (o.i !== first) await waitFile(`${o.dir}/compute.json`, COMPUTE_MS + 10_000);
  const reps = await Promise.all(Array.from({ length: tasks }, () => measure()));
  reps.forEach((r, k) => writeFileAtomicSync(`${o.dir}/share-${o.i}-${k}.json`, JSON.stringify({ ...r, node: o.node }) + '\n'));
}

/** This node's clock minus the login node's (check-slurm's clock port): the answer of the fastest of a few round trips. */
async function clockAgainstLogin(host: string, port: number): Promise<NodeClock> {
  const now = () => performance.timeOrigin + performance.now();
  const sock = connect({ host, port });
  sock.setNoDelay(true);
  sock.on('error', () => undefined); // a reset ends the lines below; the connect's own error is taken there
  try {
    const lines = createInterface({ input: sock, crlfDelay: Infinity })[Symbol.asyncIterator]();
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no answer from ${host}:${port} within 5 s`)), 5000);
      sock.once('connect', () => (clearTimeout(t), resolve()));
      sock.once('error', (e) => (clearTimeout(t), reject(e)));
    });
    let best: { offsetMs: number; rttMs: number } | undefined;
    for (let k = 0; k < 5; k++) {
      const t0 = now();
      sock.write('T\n');
      const line = await Promise.race([lines.next(), sleep(5000).then(() => ({ done: true, value: undefined }))]);
      if (line.done) throw new Error(`${host}:${port} stopped answering`);
      const t2 = now();
      const at = Number(line.value);
      if (!best || t2 - t0 < best.rttMs) best = { offsetMs: Math.round(((t0 + t2) / 2 - at) * 10) / 10, rttMs: Math.round((t2 - t0) * 100) / 100 };
    }
    return best!;
  } catch (err) {
    return { error: { code: 'clock-unreachable', message: `the login node's clock at ${host}:${port}: ${(err as Error).message}` } };
  } finally {
    sock.destroy();
  }
}

/** A child of this node's task (a host command of the bundle), its stdin left open for the caller to end. */
function startChild(entry: string, args: string[], cwd: string, timeoutMs: number): { stdin: Writable; ready: Promise<void>; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const p = spawn(process.execPath, [entry, ...args], { cwd, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, COHORT_WORKDIR: cwd } });
  children.add(p);
  let stdout = '';
  let stderr = '';
  let onReady!: () => void;
  const ready = new Promise<void>((r) => (onReady = () => r()));
  p.stdout.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
    if (stdout.includes('"ready":true')) onReady(); // check-link send --start stdin: connected, waiting for GO
  });
  p.stderr.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-8000)));
  p.stdin.on('error', () => undefined);
  p.on('exit', () => onReady());
  const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    p.on('exit', (code) => {
      children.delete(p);
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
  return { stdin: p.stdin, ready, done };
}

function child(entry: string, args: string[], cwd: string, stdin: string | undefined, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const c = startChild(entry, args, cwd, timeoutMs);
  c.stdin.end(stdin ?? '');
  return c.done;
}

async function waitFile<T>(path: string, ms = PEER_WAIT_MS): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      return JSON.parse(readFileSync(path, 'utf8')) as T;
    } catch {
      await sleep(100);
    }
  }
  return undefined;
}

