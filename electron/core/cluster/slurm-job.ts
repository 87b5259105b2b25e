// A durable run placed by Slurm (issue 16), driven through the login node: every command here
// is a Slurm client command or a bundle host command run in an SSH session on the login node.
//   submit      → `slurm-submit` (the bundle writes spec.json 0600 and the batch script, runs sbatch)
//   waitRunning → squeue until the job runs (reporting Slurm's pending reason and queue position),
//                 then the allocation's node names and each node's record in the shared workdir
//   cancel      → scancel, then until the job has left squeue (Slurm's proctrack ends every process
//                 of its steps: nothing is left on any node)
//   ended       → scontrol's word on the job (JobState, Reason, NodeList, Restarts): TIMEOUT,
//                 NODE_FAIL, ..., or PENDING again with a higher Restarts when Slurm requeued it
// The run's events, state and logs are then followed like any host's, through HostLinks whose
// commands run on the login node against each node's record directory. A requeued job (runs
// with --max-restarts) rewrites those records; waitRunning(…, attempt) waits for the records of
// Slurm's run `attempt` of the job (state.json's schedulerAttempt), not the last run's.
import { CohortError, lastJson, slurmJobName, slurmNodeWorkdir, type HostCmdError, type SlurmSubmit, type SlurmSubmitReply } from '../../../trainer/protocol';
import { runHostCommand, type HostLink } from '../runs/host-link';
import type { HostLaunch, ScheduledJob, SchedulerQueueState, SlurmJobEnd } from '../runs/run-controller';
import { shellQuote } from './probe';

export interface LoginShell {
  /** Runs a shell command on the login node (its profile env applied). */
  run(command: string, opts?: { timeoutMs?: number }): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

const POLL_MS = 1000;
const RECORDS_WAIT_MS = 120_000;

export class SlurmJob implements ScheduledJob {
  private jobId: string | undefined;
  private lastSaid = '';

  constructor(
    private readonly o: {
      runId: string;
      /** The shared workdir W on the login node (absolute). */
      workdir: string;
      login: LoginShell;
      /** Runs bundle host commands on the login node (slurm-submit). */
      loginLink: HostLink;
      /** A HostLink on the login node for node i's record (named by its Slurm node name). */
      nodeLink: (node: string, index: number) => HostLink;
      /** The request for slurm-submit; absent when attaching to a submitted run. */
      submit?: SlurmSubmit;
    },
  ) {}

  get id(): string | undefined {
    return this.jobId;
  }

  async submit(): Promise<string> {
    if (!this.o.submit) throw new Error('this Slurm run was submitted elsewhere; attach to it');
    const r = await runHostCommand(this.o.loginLink, ['slurm-submit'], { stdin: JSON.stringify(this.o.submit) + '\n', timeoutMs: 90_000 });
    const reply = lastJson<Partial<SlurmSubmitReply> & Partial<HostCmdError>>(r.stdout); // the reply, or the one failure shape
    if (r.code !== 0 || !reply?.jobId) {
      throw new CohortError(reply?.error?.code ?? 'sbatch-refused', reply?.error?.message ?? `slurm-submit on the login node failed (exit ${r.code}): ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`, { hint: 'the message is Slurm\'s own; fix the profile\'s scheduler settings (cohort probe PROFILE shows partitions, limits and accounts)' });
    }
    this.jobId = reply.jobId;
    return reply.jobId;
  }

  /** The job id (attach: found by the job's name). */
  private async job(): Promise<string> {
    if (this.jobId) return this.jobId;
    const r = await this.o.login.run(`squeue -h --name=${shellQuote(slurmJobName(this.o.runId))} -o %i | head -1; cat ${shellQuote(`${this.o.workdir}/slurm/${this.o.runId}/job.json`)} 2>/dev/null`);
    const fromQueue = r.stdout.split('\n')[0]?.trim();
    const fromFile = /"jobId":"(\d+)"/.exec(r.stdout)?.[1];
    const id = fromQueue && /^\d+$/.test(fromQueue) ? fromQueue : fromFile;
    if (!id) throw new CohortError('slurm-job-unknown', `no Slurm job of run ${this.o.runId} in squeue or in ${this.o.workdir}/slurm/${this.o.runId}/job.json`);
    this.jobId = id;
    return id;
  }

  async waitRunning(onQueued: (q: SchedulerQueueState) => void, signal: AbortSignal, opts: { minAttempt?: number } = {}): Promise<HostLaunch[]> {
    const job = await this.job();
    const minAttempt = opts.minAttempt ?? 0;
    let runningSince = 0;
    for (;;) {
      signal.throwIfAborted();
      const r = await this.o.login.run(`squeue -h -j ${job} -o '%T|%r|%N|%P' 2>/dev/null`);
      const [state, reason, nodelist, partition] = (r.stdout.trim().split('\n')[0] ?? '').split('|');
      if (!state) {
        const end = await this.ended();
        const out = await this.o.login.run(`tail -n 5 ${shellQuote(`${this.o.workdir}/slurm/${this.o.runId}/job.out`)} 2>/dev/null`);
        // A job that ran and ended fast may have every record already: the caller follows them.
        const hosts = end?.nodes ? await this.nodeHosts(end.nodes) : [];
        if (hosts.length && (await this.recordsExist(hosts.length, Math.max(minAttempt, end?.restarts ?? 0)))) return hosts;
        throw new CohortError('slurm-job-ended', `Slurm job ${job} ended (${end ? `${end.state}, reason ${end.reason}` : 'no longer known to Slurm'}) before its agents started${out.stdout.trim() ? `: ${out.stdout.trim().split('\n').join(' | ')}` : ''}`);
      }
      if (state === 'PENDING' || state === 'CONFIGURING') {
        const position = await this.position(job, partition ?? '');
        const said = `${state}|${reason}|${position}`;
        if (said !== this.lastSaid) {
          this.lastSaid = said;
          const restarts = (await this.ended())?.restarts ?? 0;
          onQueued({ jobId: job, reason: reason ?? '', ...(position ? { position } : {}), ...(partition ? { partition } : {}), ...(restarts ? { restarts } : {}) });
        }
      } else if (state === 'RUNNING' || state === 'COMPLETING') {
        runningSince ||= Date.now();
        const hosts = await this.nodeHosts(nodelist ?? '');
        // This run of the job (Slurm's Restarts): its agents' records, not an earlier run's.
        const attempt = Math.max(minAttempt, (await this.ended())?.restarts ?? 0);
        if (hosts.length && (await this.recordsExist(hosts.length, attempt))) return hosts;
        if (Date.now() - runningSince > RECORDS_WAIT_MS) {
          throw new CohortError('slurm-agents-missing', `Slurm job ${job} runs on ${nodelist} but its node agents wrote no record in ${this.o.workdir}/slurm/${this.o.runId}/ within ${RECORDS_WAIT_MS / 1000} s`, { hint: `see ${this.o.workdir}/slurm/${this.o.runId}/job.out; the workdir must be on a filesystem the compute nodes see` });
        }
      }
      await new Promise((res) => setTimeout(res, POLL_MS));
    }
  }

  /** 1-based place among the pending jobs of its partition, in Slurm's priority order. */
  private async position(job: string, partition: string): Promise<number | undefined> {
    const r = await this.o.login.run(`squeue -h -t PENDING ${partition ? `-p ${shellQuote(partition)}` : ''} --sort=-p,i -o %i 2>/dev/null`);
    const i = r.stdout.split('\n').map((l) => l.trim()).indexOf(job);
    return i >= 0 ? i + 1 : undefined;
  }

  private async nodeHosts(nodelist: string): Promise<HostLaunch[]> {
    if (!nodelist || nodelist === '(null)') return [];
    const r = await this.o.login.run(`scontrol show hostnames ${shellQuote(nodelist)}`);
    const names = r.stdout.split('\n').map((l) => l.trim()).filter(Boolean);
    return names.map((node, i) => ({ host: node, link: this.o.nodeLink(node, i) }));
  }

  /** Every node's record exists, written by the agents of Slurm's run `attempt` of the job (0: the first). */
  private async recordsExist(n: number, attempt: number): Promise<boolean> {
    const files = Array.from({ length: n }, (_, i) => shellQuote(`${slurmNodeWorkdir(this.o.workdir, this.o.runId, i)}/runs/${this.o.runId}/state.json`));
    const check = attempt > 0 ? `grep -q '"schedulerAttempt":${attempt}[,}]' "$f"` : 'test -f "$f"';
    const r = await this.o.login.run(`for f in ${files.join(' ')}; do ${check} || exit 1; done`);
    return r.code === 0;
  }

  async cancel(): Promise<void> {
    const job = await this.job().catch(() => undefined);
    if (!job) return;
    await this.o.login.run(`scancel ${job}`);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const r = await this.o.login.run(`squeue -h -j ${job} -o %T 2>/dev/null`);
      if (!r.stdout.trim()) return;
      await new Promise((res) => setTimeout(res, 500));
    }
  }

  async ended(): Promise<SlurmJobEnd | undefined> {
    const job = await this.job().catch(() => undefined);
    if (!job) return undefined;
    const r = await this.o.login.run(`scontrol show job -o ${job} 2>/dev/null`);
    const field = (k: string) => new RegExp(`(?:^|\\s)${k}=(\\S+)`).exec(r.stdout)?.[1];
    const state = field('JobState');
    if (!state) return undefined;
    return { jobId: job, state, reason: field('Reason') ?? 'None', nodes: field('NodeList') ?? '', restarts: Number(field('Restarts') ?? '0') || 0 };
  }

  /** squeue lines of the run's job still in the queue (none once it has ended): the leftover check. */
  async stillQueued(): Promise<string[]> {
    const r = await this.o.login.run(`squeue -h --name=${shellQuote(slurmJobName(this.o.runId))} -o '%i %T %N'`);
    return r.stdout.split('\n').filter((l) => l.trim());
  }
}
