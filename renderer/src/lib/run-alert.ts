// What the alert says when a followed run ends (pure: the words, not the Notification).
export interface RunAlertText {
  title: string;
  body: string;
}

/** The notification for a run that ended in `status`; null for a status that is no ending. */
export function runAlertText(run: { runId: string; name?: string | undefined; status: string; error?: string | undefined; median?: number | null | undefined }): RunAlertText | null {
  const who = run.name ? `${run.name} (${run.runId})` : run.runId;
  switch (run.status) {
    case 'ok':
      return { title: `Run finished: ${run.name || run.runId}`, body: `${who} ended ok${run.median ? `, median ${run.median.toFixed(1)} samples/s` : ''}.` };
    case 'failed':
      return { title: `Run failed: ${run.name || run.runId}`, body: `${who} failed${run.error ? `: ${run.error}` : ''}.` };
    case 'cancelled':
      return { title: `Run stopped: ${run.name || run.runId}`, body: `${who} was cancelled.` };
    default:
      return null;
  }
}
