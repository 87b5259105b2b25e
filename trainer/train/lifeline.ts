// The rank's lifeline to its agent: the agent starts every rank with stdin a pipe from itself and
// COHORT_LIFELINE=1. The kernel closes that pipe whenever the agent dies — exit, crash or kill -9 —
// and the rank exits at once on EOF, so no rank ever trains on without its agent (issue 14 item 1).
// A rank started by hand (no COHORT_LIFELINE) keeps its terminal's stdin untouched.
export const LIFELINE_ENV = 'COHORT_LIFELINE';
/** Exit code of a rank whose agent vanished (like a SIGKILL: it did not finish). */
export const LIFELINE_EXIT = 137;

export function holdLifeline(env: NodeJS.ProcessEnv, stdin: NodeJS.ReadStream = process.stdin): void {
  if (env[LIFELINE_ENV] !== '1') return;
  const gone = () => {
    process.stderr.write('rank: the agent is gone (lifeline closed); exiting\n');
    process.exit(LIFELINE_EXIT);
  };
  stdin.on('end', gone);
  stdin.on('close', gone);
  stdin.on('error', gone);
  stdin.on('data', () => {}); // nothing is ever sent: reading only to see EOF
  stdin.resume();
}
