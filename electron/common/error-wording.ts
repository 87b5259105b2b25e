// Every error code Cohort's core, trainer and clients produce, with its sentence (issue 22: one
// truth in GUI and CLI): which host (`{host}`, filled from the error), what happened, and what to
// do. One row per code serves both clients: where the next step differs, the row says it both ways
// as `[[dashboard words|terminal words]]` (a view and its button; a command and its flag), so the
// dashboard (guiWording: never a CLI flag) and `cohort` (cliWording: never a dashboard view) say the
// same thing. Core's own hint (the specifics of one error: the partitions there are, the key paths
// tried) follows the sentence in the terminal (error-hints.ts); the dashboard shows the sentence. `ErrorCode` is the table's keys. A
// code made at run time from a family (`slurm-<job state>`, `mismatch-<what>` from cohort check) is
// worded by its family; Node's errno codes (ECONNREFUSED, ENOSPC...) by ERRNO_WORDING.
//
// Keeping it whole: test/build/error-wording.test.ts reads the sources for the codes errors are made with (an
// error class's code argument, a code field, a class's fixed code, the *ErrorCode unions, check
// problems) and fails on a code this table does not word, and on a row one surface cannot read
// (a CLI flag in the dashboard's words, a dashboard view in the terminal's). A new code is a new row here.

/** The dashboard's sentence per code; `{host}` becomes the host the error names ("the host" if none). */
export const ERROR_WORDING = {
  // ── SSH: reaching and logging in to a host ─────────────────────────────────────────────────────
  'ssh-resolve': "{host}'s address does not resolve to a machine: [[in Profiles|in the profile (cohort profiles export/import)]], correct the host's address (or fix DNS / /etc/hosts on this machine), then [[Test connection|cohort probe PROFILE]]",
  'ssh-refused': '{host} refused the connection: nothing listens on its SSH port. Check that sshd runs there and that the port [[in Profiles|in the profile (cohort profiles export/import)]] is right, then [[Test connection|cohort probe PROFILE]]',
  'ssh-timeout': '{host} did not answer in time: it may be down, firewalled, or its address [[in Profiles|in the profile (cohort profiles export/import)]] may be wrong. Check it, then [[Test connection|cohort probe PROFILE]]',
  'ssh-unreachable': 'There is no network route to {host}: it is down or on a network this machine cannot reach. Check the address [[in Profiles|in the profile (cohort profiles export/import)]], or add a jump host, then [[Test connection|cohort probe PROFILE]]',
  'ssh-auth': "Cohort could not log in to {host} (no key to offer, or none accepted): [[in Profiles|in the profile (cohort profiles export/import)]], give this host a key file or load your key into ssh-agent, check the user, make sure the key's public half is in the host's authorized_keys, then [[Test connection|cohort probe PROFILE]]",
  'ssh-key': "The key file for {host} cannot be read or is not a private key: [[in Profiles|in the profile (cohort profiles export/import)]], point the host's key path at a readable private key, then [[Test connection|cohort probe PROFILE]]",
  'ssh-key-passphrase': "The key for {host} is encrypted and its passphrase was missing or wrong: [[enter it when the dashboard asks|enter it when cohort asks (on a terminal)]], or load the key into ssh-agent, then start again",
  'ssh-agent': 'ssh-agent could not be used for {host}: start it and add your key (ssh-add in a terminal), or give the host a key file [[in Profiles|in the profile (cohort profiles export/import)]]',
  'ssh-host-key-unknown':
    "Compare the fingerprint with the host's own (on the host: ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub), [[then open the profile in Profiles, choose Test connection on this host and Trust and remember|then connect again with --accept-new-host-key (cohort probe PROFILE --accept-new-host-key)]]",
  'ssh-host-key-changed':
    'If the host was reinstalled and you trust its new key, remove the old line from known_hosts (ssh-keygen -R HOST in a terminal), [[then Test connection in Profiles and trust the new key|then connect again with --accept-new-host-key]]; otherwise do not connect',
  'ssh-host-key-revoked': "{host}'s key is marked revoked in known_hosts: do not connect. Ask the host's administrator for its current key before using it again",
  'ssh-jump': 'The jump host could not open the connection onward to {host}: check the jump host and the address of {host} as the jump host sees it [[(Profiles)|(the profile)]], then [[Test connection|cohort probe PROFILE]]',
  'ssh-protocol': "The SSH handshake with {host} failed: the server may be too old or the port may not be an SSH server. Check the port [[in Profiles|in the profile (cohort profiles export/import)]] and the host's sshd",
  'ssh-disconnected': 'The connection to {host} dropped: check that the host is up and the network is stable; a running run keeps going on its hosts, so [[open it again from History to follow it|follow it again with cohort attach RUN]]',
  'ssh-channel': '{host} refused to open a session channel: its sshd may limit sessions (MaxSessions) or be overloaded. Wait a moment and start again',
  'ssh-remote-command': 'A command on {host} failed: read the message above for its output, fix the cause on the host (disk, permissions, software), then start again',
  'ssh-aborted': 'The connection to {host} was given up because the launch or check stopped: nothing to do unless you want to start it again',
  'ssh-config-unreadable': 'Your ssh config file could not be read: check its permissions, or add the host by hand [[in Profiles|in the profile (cohort profiles export/import)]]',
  'ssh-config-token': 'A value in your ssh config could not be understood: fix it in the ssh config, or add the host by hand [[in Profiles|in the profile (cohort profiles export/import)]]',
  'login-command-timeout': "A command on the login host {host} did not finish in time: the login node may be overloaded. Try again, or check the login host's load",
  // ── Profiles ───────────────────────────────────────────────────────────────────────────────────
  'profile-not-found': 'That profile no longer exists (deleted or renamed elsewhere): choose another one, or create it again [[in Profiles|(cohort profiles list shows them; cohort profiles add or import creates one)]]',
  'profile-exists': 'A profile of that name already exists: choose another name [[in Profiles|for the profile]]',
  'profile-invalid': 'The profile has a field Cohort cannot use (named above): correct it [[in Profiles|in the profile (cohort profiles export/import)]] and save',
  'profile-reserved': 'That name is reserved for the built-in profile: choose another name [[in Profiles|for the profile]]',
  'profile-io': 'The profile could not be read or written on this machine: check the disk and the permissions of the config directory, then save again',
  'local-profile': 'choose a cluster profile, or the local profile [[in Launch|in the run\'s flags (cohort run --help)]] to run on this machine',
  'local-no-ssh': 'The local profile runs on this machine and has no host to test or deploy to: [[use Launch with the local profile directly|run it with cohort run --local]]',
  'cluster-unavailable': 'This Cohort has no SSH layer to reach the run\'s cluster: [[open the run from the desktop app or the dashboard of `cohort serve`|follow it with a cohort that has SSH (cohort attach RUN)]]',
  // ── Preparing hosts: deploy, probe, bundle ─────────────────────────────────────────────────────
  'deploy-failed': "Deploying the trainer to {host} failed: check the host's disk and the workdir's permissions [[(Profiles, host workdir)|(the host's workdir in the profile)]], then start again",
  'launch-cancelled': 'Cohort stopped preparing {host} because another host failed first: fix that host (above), then start again',
  'bundle-mismatch': "{host} runs this run with another version of the trainer than this client has: follow it from the client that started it, or let the run end and start a new one",
  'no-trainer-bundle': 'This installation has no trainer bundle to deploy: reinstall Cohort (or build it), then start again',
  'node-missing': 'Node.js was not found on {host}: install Node 20.19 or later there (or set the host\'s node path [[in Profiles|in the profile]]), then start again',
  'node-too-old': "{host}'s Node.js is too old for the trainer: install Node 20.19 or later there (or point the host's node path [[in Profiles|in the profile]] at a newer one)",
  'probe-incomplete': "The probe of {host} did not finish: its login shell may not be POSIX sh compatible. Check the host's shell, then probe again [[in Hosts|with cohort probe PROFILE]]",
  'engine-unavailable': '{host} lacks what the chosen engine needs: install it there (the message says what), or choose another engine [[in Launch|in the run\'s flags (cohort run --help)]]',
  'backend-unavailable': 'The compute backend the run asked for is not available on {host}: choose another backend [[in Launch|in the run\'s flags (cohort run --help)]], or install it there',
  'gpu-required': 'The run requires a GPU, but a rank on {host} would run on the CPU: check the GPU and its driver on {host} [[(Hosts shows them)|(cohort probe PROFILE shows them)]], [[or launch without requiring a GPU|or run without --require-gpu]]',
  'gpu-missing': '{host} has no usable GPU for the GPU slots the profile gives it: check the driver there [[(Hosts shows the GPUs)|(cohort probe PROFILE shows the GPUs)]], or change the profile to CPU slots',
  'bf16-unsupported': "{host}'s GPU cannot run bf16: [[turn bf16 off in Launch|run without --bf16 (--fp16 instead)]], or run on GPUs that support it",
  // ── Starting and running a run ─────────────────────────────────────────────────────────────────
  'bad-config': 'A setting of the run is refused (named above): correct that field [[in Launch|in the run\'s flags (cohort run --help)]], then start again',
  'bad-data': 'The training data could not be used on {host}: check the data path [[in Launch|in the run\'s flags (cohort run --help)]] and the files on the host, or choose synthetic data',
  'bad-checkpoint': 'The checkpoint on {host} is damaged or not a Cohort checkpoint: start without resuming, or remove the bad checkpoint from the run\'s directory on the host',
  'checkpoint-mismatch': "The checkpoint was written by a run with other settings: resume only with the same model settings, or start a fresh run",
  'bad-spec': 'The run plan sent to {host} was refused: this client and the host\'s trainer may differ in version. Start the run again (it redeploys)',
  'bad-env': 'A rank on {host} was started with a missing or malformed rendezvous setting: start the run again; if it repeats, report it with the run\'s logs [[(History)|(cohort runs show RUN)]]',
  'bad-argument': 'Cohort was asked something it cannot do (the message says what): correct the value and try again',
  'bad-run-id': 'That is not a run id: [[copy the id from History|copy the id from cohort runs list]], then try again',
  'bad-run-name': 'The run name is refused (the message says why): shorten or correct it [[in Launch or History|with cohort run --name or cohort runs rename RUN NAME]]',
  'bad-run-tags': 'A tag is refused (the message says why): correct the tags [[in Launch|in the run\'s flags (cohort run --help)]]',
  'bad-run-notes': 'The notes are refused (the message says why): shorten them [[in Launch|in the run\'s flags (cohort run --help)]]',
  'agent-start': "The run's agent could not start on {host}: read its output above; check the workdir and Node on {host}, then start again",
  'control-listen': "The run's leader on {host} could not open its control port: another process may hold it. Free the port or start the run again",
  'master-port-in-use': 'The rendezvous port on {host} is already in use (another run or program holds it): wait for that run to end, or start again (a new port is chosen)',
  'rendezvous-timeout': 'Not every rank joined in time: a host may be slow to start or a firewall may block the ranks\' ports between hosts. [[Run the check in Launch|Run cohort check PROFILE]], then start again',
  'rendezvous-mismatch': 'The ranks disagree on the run (world size or version): every host must run the same trainer. Start the run again (it redeploys to every host)',
  'connect-failed': 'A rank on {host} could not connect to its peers: check that the hosts reach each other on the ranks\' ports ([[the check in Launch measures the links|cohort check PROFILE measures the links]])',
  'connect-timeout': '{host} could not reach its peer in time: check the network and firewall between the hosts, then run the check again',
  'no-backend': 'No way for the ranks to exchange gradients fits this world: read the message for what was tried; check the hosts\' network and versions',
  protocol: 'The ranks on {host} disagreed on the sequence of messages (a bug or mixed versions): start the run again; if it repeats, report it with the run\'s logs [[(History)|(cohort runs show RUN)]]',
  'peer-lost': 'A rank on {host} lost a peer: the other rank or its host stopped (see its own error); [[with restarts set in Launch|with --max-restarts]] the run resumes from its last checkpoint',
  'rank-hung': 'A rank on {host} stopped making progress: look at its last log lines below; check the host (load, GPU, memory), then start again or resume from the checkpoint',
  'rank-exited': 'A rank on {host} exited early: its last log lines are below. Fix the cause (memory, data, settings), then start again',
  'no-done': 'A rank on {host} ended without saying it finished: it was killed (out of memory?) or crashed. See its last log lines, check the host\'s memory, then start again',
  'spawn-failed': 'A rank process could not be started on {host}: check the host\'s memory and process limits, and Node there, then start again',
  'host-lost': '{host} stopped answering (down, rebooted or unreachable): bring it back, or give the profile a spare host [[(Profiles)|("spare": true on a host)]] so the run can go on without it; with restarts set, the run resumes',
  'agent-silent': "A rank on {host} stopped itself because its host's agent went silent (hung or stopped): check that host (load, memory, a stopped process), then start again or resume from the checkpoint",
  'agent-lost': "The run's agent on {host} died without recording an end: check the host (memory, reboots), then [[open the run's logs from History|read the run's logs (its folder: cohort runs show RUN)]] and start it again",
  'host-unreachable': 'This client cannot reach {host} to follow the run: the run may still go on there. Check the network, then [[open the run again from History|follow it again with cohort attach RUN]]',
  'leader-lost': "{host} lost the run's leader: check the leader's host; with restarts set, the run resumes when it is back",
  'leader-unreachable': "{host} cannot reach the run's leader: check the network between the hosts, then start again",
  'followers-missing': "Not every host's agent joined the run's leader in time: check the hosts named above (reachable, Node present), then start again",
  'spare-missing': 'The spare host {host} did not join in time to take over: [[keep the dashboard following the run (it starts the spare)|keep a client following the run (cohort attach RUN: it starts the spare)]], and check that the spare is reachable [[(Hosts)|(cohort probe PROFILE)]]',
  'slots-busy': "{host}'s GPU slots are busy with another run: wait for it to end, [[turn on Queue if slots are busy in Launch|pass --queue to cohort run]], or use other hosts",
  'rejoin-busy': '{host} is already running a rank of this run: wait for it, or [[stop the run from Live run|stop the run (cohort stop RUN)]] and start again',
  'run-exists': 'A run with this id already exists on {host}: start the run again (it gets a new id)',
  'run-ended': 'The run had already ended on {host}: [[open it from History to see its record|cohort runs show RUN has its record]]',
  'run-stopped': 'The run was stopped on {host} before this could start: [[open it from History to see its record|cohort runs show RUN has its record]]',
  'no-such-run': '{host} has no record of this run (its workdir was cleaned, or it ran elsewhere): [[open what this machine kept from History|cohort runs show RUN has what this machine kept]]',
  'remote-agent': "The run's agent runs on another node of the cluster: [[stop it from Live run|stop it with cohort stop RUN]] (Cohort cancels its scheduler job)",
  'record-damaged': "The run's record on {host} is damaged: what could be read is shown; the rest is lost. Start the run again to measure it anew",
  cancelled: 'The run was stopped on request: [[its measurements so far are in History|its measurements so far are in cohort runs show RUN]]',
  aborted: 'The operation was stopped before it finished (a stop or a failure elsewhere): nothing to do unless you want it again',
  disposed: 'Cohort was shutting down while this ran: start it again',
  'model-disposed': 'The model was released while a rank still used it (a bug): start the run again and report it [[with its logs (History)|with its logs (cohort runs show RUN)]]',
  'slow-rank': 'A rank on {host} is slower than its peers and holds every step back: check that host\'s load and GPU [[(the system panel in Live run)|(the system lines of cohort attach RUN)]], or give it fewer ranks',
  usage: 'A host command was called wrongly (a version mismatch between this client and the host?): start again so the trainer is redeployed',
  // ── Slurm ──────────────────────────────────────────────────────────────────────────────────────
  'slurm-missing': 'Slurm commands (sbatch, squeue) were not found on the login host {host}: check the login host [[in Profiles|in the profile (cohort profiles export/import)]], or load Slurm in its login shell',
  'slurm-partition-unknown': 'The partition in the profile does not exist on this cluster: choose one sinfo lists, [[in Profiles|in the profile (cohort profiles export/import)]]',
  'slurm-partition-down': "The profile's partition is down or drained: choose another partition [[in Profiles|in the profile (cohort profiles export/import)]], or wait for it to come back",
  'slurm-too-many-nodes': 'The profile asks for more nodes than the partition has: lower the node count [[in Profiles|in the profile (cohort profiles export/import)]], or choose a larger partition',
  'slurm-workdir-not-shared': "The workdir on the login host {host} is not visible from the compute nodes: set the profile's workdir to a shared filesystem (home, /scratch), [[in Profiles|in the profile (cohort profiles export/import)]]",
  'slurm-agents-missing': "The Slurm job started but its nodes' agents did not report in: open the job's output ([[the run's logs in History|job.out in the run's Slurm directory on the login node]]) to see why",
  'slurm-job-ended': "The run's Slurm job ended before Cohort could follow it: [[open the run's logs in History|its logs are in the run's folder (cohort runs show RUN)]]; check the job's state with the cluster's administrator",
  'slurm-job-unknown': 'Slurm no longer knows the run\'s job (it ended long ago and was purged): [[the run\'s record in History|the run\'s record here (cohort runs show RUN)]] is all that is left',
  'slurm-requeued': 'Slurm requeued the run\'s job (a node failed or it was preempted): it resumes from its last checkpoint when it runs again; nothing to do',
  'slurm-no-allocation': 'The check found no Slurm allocation to run in: check the partition and your account [[in Profiles|in the profile (cohort profiles export/import)]], then run the check again',
  'sbatch-refused': "sbatch refused the run's job (its reason is above): correct the profile's Slurm settings (partition, account, extra arguments) [[in Profiles|in the profile (cohort profiles export/import)]]",
  // ── cohort check ───────────────────────────────────────────────────────────────────────────────
  'check-failed': 'The check found a problem that would stop the run (listed above): fix it, then [[run the check again in Launch|run cohort check PROFILE again]]',
  'check-slurm-failed': "The check's Slurm allocation on the login host {host} failed (its output is above): check the partition, account and shared workdir [[in Profiles (Hosts probes them)|in the profile (cohort probe PROFILE probes them)]], then run the check again",
  'check-host-failed': 'The check could not run on {host}: check that it is reachable and has Node [[(Hosts)|(cohort probe PROFILE)]], then run the check again',
  'check-compute-failed': 'The compute measurement failed on {host}: a run of these settings would likely fail the same way; read the message, fix the settings [[in Launch|in the run\'s flags (cohort run --help)]], then check again',
  'compute-unmeasured': 'One rank of these settings could not be measured on {host}: a run would likely fail the same way. [[Start a short run (2 steps) from Launch|Start a short run (cohort run --steps 2)]] to see its error',
  'port-in-use': 'The port asked for on {host} is already taken by another program: free it, or let Cohort choose a port (leave the port empty)',
  'connect-refused': '{host} refused the connection to its peer\'s port: a firewall or no listener there. Check the firewall between the hosts, then run the check again',
  'link-failed': 'The link from {host} to its peer failed during the measurement: check the network between the hosts, then run the check again',
  'port-refused': 'A rank port on {host} refused connections from the other hosts: open the ranks\' ports in its firewall (the check names the range), then run the check again',
  'spare-unreachable': "The spare host {host} cannot reach the run's leader: it could not take a lost host's place. Open the connection from the spare to the leader's ports (or take the spare out of the profile), then run the check again",
  'clock-unreachable': "{host} could not reach the clock the login node serves for the check (a firewall between the nodes and the login node?): its clock offset is unknown; open that port or check the node's time sync (chrony/ntpd) by hand",
  'clock-unmeasured': "{host}'s clock offset could not be measured: check its time sync (chrony/ntpd) by hand; a large offset makes the run's timelines disagree",
  'run-live': "The run is still going on {host}: its record there cannot be removed while it runs. Stop it first ([[Live run → Stop|cohort stop RUN]]), then delete it again",
  'port-blocked': "The ranks' ports on {host} cannot be reached from the other hosts (a firewall drops them): open that port range between the hosts, then run the check again",
  'slurm-check-failed': 'The check could not run in a Slurm allocation (srun failed; the message has its output): check the partition and account [[in Profiles|in the profile (cohort profiles export/import)]], then run the check again',
  'listen-failed': '{host} could not open a port to measure its link: free a port there (or check its firewall), then run the check again',
  'no-answer': '{host} did not answer the check in time: it may be overloaded or down. Check it [[in Hosts|with cohort probe PROFILE]], then run the check again',
  'workdir-not-writable': "{host} cannot write in its workdir: give it a workdir its user can write [[(Profiles, host workdir)|(the host's workdir in the profile)]], or fix the permissions",
  'disk-low': '{host} has too little free disk under its workdir for a run: free disk there, or point its workdir at a larger filesystem [[in Profiles|in the profile (cohort profiles export/import)]]',
  'clock-offset': "{host}'s clock differs from this machine's: run NTP there (chrony, systemd-timesyncd); timelines mix both clocks",
  'nvidia-smi-failed': "nvidia-smi did not answer on {host} (driver not loaded, or a GPU fell off the bus): run it on {host}, check dmesg for Xid errors, reload the driver or reboot",
  'gpu-ecc': 'A GPU on {host} reports uncorrected memory errors: take it out of runs (the profile\'s gpus) and reset it; if errors come back it needs replacing',
  'gpu-rows-pending': 'A GPU on {host} has memory repairs pending: reset it (nvidia-smi -r) or reboot the host before training',
  'gpu-remap-failed': 'A GPU on {host} failed a memory repair: take it out of service (leave it out of the profile\'s gpus)',
  'gpu-throttled': "A GPU on {host} runs throttled (heat or power): check the host's cooling and power limits; a throttled GPU makes its rank the straggler",
  'gpu-persistence-off': "Persistence mode is off on {host}'s GPUs (each start re-initialises the driver): enable it there (nvidia-smi -pm 1)",
  'gpu-memory-held': "Other processes hold memory on a GPU of {host}: stop them, or leave that GPU out of the profile's gpus; a rank there may run out of memory",
  // ── History and files ──────────────────────────────────────────────────────────────────────────
  'run-not-found': 'That run is no longer in [[History|the run history]] (deleted elsewhere?): [[refresh History|cohort runs list shows what is left]]',
  'run-ambiguous': 'Several runs match that id prefix: [[copy the whole id from History|give more of the id (cohort runs list)]]',
  'run-not-active': 'That run is not running any more: [[open it from History to see how it ended|cohort runs show RUN says how it ended]]',
  'run-not-durable': 'This run was recorded by an older Cohort without its hosts\' record locations, so it cannot be followed: its hosts still hold its logs under their workdir',
  'stop-owed': "The stop did not reach {host} (down when it was sent): it is owed, and is sent again when {host} answers, [[at History's next refresh|the next time cohort runs list asks the hosts]]; until then whatever of the run survived on {host} is not told to stop",
  'run-still-running': 'That run is still running: [[stop it in Live run first|stop it first (cohort stop RUN)]], then delete it',
  'file-not-found': 'The file was not found: check the path (a typo, or the file was moved)',
  'file-too-large': 'The file is too large to read here: choose a smaller file',
  'file-unreadable': "The file could not be read: check its permissions and the disk",
  'not-a-regular-file': 'That path is not a regular file: choose a file',
  // ── The dashboard's connection to core ─────────────────────────────────────────────────────────
  disconnected: 'The dashboard lost its connection to Cohort: check that `cohort serve` (or the app) still runs, then reload the page; runs go on on their hosts',
  'renderer-missing': 'The dashboard files are missing from this installation: reinstall Cohort (or build it)',
  'passphrase-request-gone': 'That passphrase request was answered in another window or timed out: retry the action that needed the key',
  'no-passphrase-prompts': 'This Cohort cannot ask for key passphrases: load the key into ssh-agent (ssh-add in a terminal), then retry',
  'bad-message': 'The dashboard sent a request Cohort could not read (mixed versions?): reload the page',
  'unknown-method': 'The dashboard asked for something this Cohort does not know (mixed versions?): reload the page, or update Cohort',
  'unknown-event': 'The dashboard subscribed to something this Cohort does not know (mixed versions?): reload the page',
  'unknown-event-type': 'A run sent an event this Cohort does not know (a newer trainer?): update Cohort; the rest of the run is shown',
  'too-many-subscriptions': 'This page follows too many things at once: close other dashboard tabs or reload the page',
  'forbidden-sender': 'A request came from a window Cohort does not trust and was refused: reload the app',
  internal: 'Cohort failed unexpectedly (the message says where): try again; if it repeats, report it with the message',
  error: 'Something failed (the message says what): try again; if it repeats, report it with the message',
} as const satisfies Record<string, string>;

export type ErrorCode = keyof typeof ERROR_WORDING;

/**
 * Codes made at run time from a family: the final state of a Slurm job (`slurm-` + the state,
 * lower case: slurm-failed, slurm-timeout, slurm-node-fail, slurm-out-of-memory, ...) and a
 * version/hardware difference between hosts found by cohort check (`mismatch-` + what differs).
 */
export const ERROR_FAMILIES: readonly { prefix: string; gui: string }[] = [
  { prefix: 'slurm-', gui: "The run's Slurm job ended badly on {host} (its state is in the code): [[open the run's logs in History|read the run's logs (cohort runs show RUN)]]; for a timeout raise the time limit, for a node failure start again (other nodes are chosen)" },
  { prefix: 'mismatch-', gui: 'The hosts differ (what and where is above): make them the same (same driver, Node, engine and trainer on every host), or keep the odd hosts in another profile' },
];

/** Codes of information notices (not failures): shown without a hint. */
export const NOTICE_CODES: readonly string[] = ['saved', 'trusted'];

/**
 * Node's system error codes (errno) that reach a user as an error's code: a plain Error from fs or
 * net that no layer turned into one of Cohort's codes (a config or data directory that cannot be
 * written, a full disk, a port taken, a connection refused). `{where}` is what the error names: its
 * path, its address:port, or the name it looked up (errorWhere); `{host}` as above.
 */
export const ERRNO_WORDING = {
  ECONNREFUSED: "{where} refused the connection: nothing listens there. Check that the service (sshd, the run's agent, `cohort serve`) runs there and that the address and port are right, then try again",
  ECONNRESET: 'The connection to {where} was reset by the other side (it restarted or crashed, or a firewall cut the connection): try again; if it repeats, check the logs over there and the network in between',
  ETIMEDOUT: '{where} did not answer in time: it may be down, overloaded or firewalled. Check that it is up and reachable from this machine, then try again',
  EHOSTUNREACH: 'There is no route to {where}: the machine is down or on a network this one cannot reach. Check the address and the network (a jump host?), then try again',
  ENETUNREACH: "The network of {where} cannot be reached from this machine: check this machine's network connection and the address, then try again",
  ENOTFOUND: 'The name {where} does not resolve to an address: check its spelling [[in Profiles|in the profile (cohort profiles show PROFILE)]], or DNS and /etc/hosts on this machine',
  EAI_AGAIN: "The name {where} could not be resolved just now (DNS did not answer): check this machine's network and DNS, then try again",
  EACCES: 'Permission denied on {where}: give this user access to it (chmod, chown), or point Cohort at a directory this user may write (COHORT_CONFIG_DIR, COHORT_DATA_DIR), then try again',
  EPERM: 'The operation on {where} is not permitted (a system or protected location): point Cohort at a directory of your own (COHORT_CONFIG_DIR, COHORT_DATA_DIR), then try again',
  EROFS: '{where} is on a read-only filesystem: point Cohort at a writable directory (COHORT_CONFIG_DIR, COHORT_DATA_DIR), or remount it read-write, then try again',
  ENOSPC: 'The disk holding {where} is full: free space there (old runs: [[Delete in History|cohort runs rm RUN]]), or point Cohort at a larger filesystem (COHORT_DATA_DIR), then try again',
  EDQUOT: 'Your disk quota on the filesystem of {where} is used up: free space there (old runs: [[Delete in History|cohort runs rm RUN]]) or ask for a larger quota, then try again',
  ENOENT: '{where} does not exist: check the path (a typo, or it was moved or deleted), then try again',
  ENOTDIR: 'A part of the path {where} is a file where a directory is needed: check the path (COHORT_CONFIG_DIR, COHORT_DATA_DIR and the paths you gave), then try again',
  EISDIR: '{where} is a directory where a file is needed: give the path of a file',
  EADDRINUSE: '{where} is already in use: another program (or another `cohort serve`) listens there. Stop it, or choose another port[[| (cohort serve --port N, or 0 for any free port)]]',
  EADDRNOTAVAIL: '{where} is not an address of this machine: listen on one of its own addresses (127.0.0.1 for this machine only)',
  EMFILE: 'Cohort has too many files open (the per-process limit): raise the limit (ulimit -n) for the shell that starts it, then try again',
  EPIPE: 'The other side of a connection or pipe ({where}) went away in the middle of a write: try again; if it repeats, check that side',
} as const satisfies Record<string, string>;

/** What an errno error names (Node's SystemError fields), for `{where}`. */
export interface ErrorWhere {
  path?: string | undefined;
  address?: string | undefined;
  port?: number | undefined;
  hostname?: string | undefined;
}

const NET_ERRNO = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EADDRINUSE', 'EADDRNOTAVAIL', 'EPIPE'];

/** `{where}` of an errno error: its path, address:port or looked-up name; else the host, else words that point at the message. */
export function errorWhere(code: string, e: ErrorWhere = {}, host?: string): string {
  if (e.path) return e.path;
  if (e.hostname) return e.hostname;
  if (e.address) return e.port === undefined ? e.address : `${e.address.includes(':') ? `[${e.address}]` : e.address}:${e.port}`;
  if (host) return host;
  return NET_ERRNO.includes(code) ? 'the address named above' : 'the path named above';
}

/** A row's text for one surface: `[[dashboard words|terminal words]]` become one side; `{host}`, `{where}`, RUN filled. */
function render(text: string, surface: 'gui' | 'cli', host: string | undefined, fill: { where?: string; runId?: string | undefined }): string {
  const t = text
    .replace(/\[\[([^|\]]*)\|([^\]]*)\]\]/g, (_, gui: string, cli: string) => (surface === 'gui' ? gui : cli))
    .replace(/^\{host\}/, host || 'The host')
    .replaceAll('{host}', host || 'the host')
    .replaceAll('{where}', fill.where ?? 'it');
  return surface === 'cli' && fill.runId ? t.replace(/\bRUN\b/g, fill.runId) : t;
}

function row(code: string): string | undefined {
  return (ERROR_WORDING as Record<string, string>)[code] ?? (ERRNO_WORDING as Record<string, string>)[code] ?? ERROR_FAMILIES.find((f) => code.startsWith(f.prefix))?.gui;
}

/** What an error carries that its sentence names: the run, and an errno error's path or address. */
export interface WordingFill extends ErrorWhere {
  runId?: string | undefined;
}

function wording(surface: 'gui' | 'cli', code: string, host?: string, e: WordingFill = {}): string | undefined {
  const w = row(code);
  if (w === undefined) return undefined;
  let where = w.includes('{where}') ? errorWhere(code, e, host) : undefined;
  if (where?.startsWith('the ') && w.startsWith('{where}')) where = 'T' + where.slice(1); // a sentence starts with it
  return render(w, surface, host, { ...(where ? { where } : {}), runId: e.runId });
}

/** The dashboard's sentence for `code` with `{host}` filled in; undefined for a code it does not word. */
export function guiWording(code: string, host?: string, e?: WordingFill): string | undefined {
  return wording('gui', code, host, e);
}

/** The same sentence for a terminal (`cohort`): the row's terminal words (commands, flags) instead of the dashboard's views. */
export function cliWording(code: string, host?: string, e?: WordingFill): string | undefined {
  return wording('cli', code, host, e);
}
