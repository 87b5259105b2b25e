// A stop owed to a host that was down when it was sent (RunMeta.stopOwed, issue 24 item 4) is said
// where a user looks (issue 22), not only in `runs show --json`: `cohort runs show` (a line),
// `cohort runs list` (a * on the status, the sentence under the table), History (under the status)
// and the run's view (a note above it), in the words of error-wording.ts's row `stop-owed`.
// Real parts: a tiny local run the real CLI trains and records, the real CLI's text, the real
// `cohort serve` in Chromium. Made by hand: the record's `stopOwed` (written with core's RunStore),
// because a host down during a stop takes netns hosts (test/cluster/stop-owed.test.ts makes it for
// real and reads `runs show` there too). It names h1, no host of this local run, so listing (which
// sends an owed stop to the run's own hosts again) cannot deliver it: the marker stays to be shown.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliWording, guiWording } from '../../electron/common';
import { RunStore } from '../../electron/core/runs/run-store';
import { tinyRun } from '../helpers/tiny';
import { useDashboard } from './open-dashboard';
import { ARTIFACTS, CHROMIUM } from './serve-process';

describe.skipIf(!existsSync(CHROMIUM))('a stop owed to a host, in the CLI\'s text, History and the run view', () => {
  const ui = useDashboard();
  let runId = '';
  const cli = async (args: string[]) => {
    const r = ui().cli(args, { env: { NO_COLOR: '1' } });
    const { code } = await r.exit;
    expect(code, r.stderr.slice(-2000)).toBe(0);
    return r.stdout;
  };

  beforeAll(async () => {
    const r = ui().cli(['run', '--local', ...tinyRun(), '--steps', '2'], { env: { NO_COLOR: '1' } });
    expect((await r.exit).code, r.stderr.slice(-2000)).toBe(0);
    runId = /run (\S+) recorded in/.exec(r.stderr)?.[1] ?? '';
    expect(runId).not.toBe('');
    new RunStore(join(ui().serve.dataDir, 'runs')).patch(runId, { stopOwed: ['h1'] });
  }, 300_000);

  it('cohort runs show says it in a line; runs list marks the run and says it under the table', async () => {
    const sentence = cliWording('stop-owed', 'h1')!;
    expect(sentence).toMatch(/^The stop did not reach h1 .*cohort runs list/);
    const shown = await cli(['runs', 'show', runId]);
    expect(shown).toContain(`\nstop owed: ${sentence}\n`);
    const listed = await cli(['runs', 'list']);
    expect(listed).toMatch(new RegExp(`^${runId} +local +\\w+\\* `, 'm'));
    expect(listed).toContain(`\n* ${runId}: ${sentence}\n`);
    // the record still owes it (h1 is not this run's host: nothing to deliver it to)
    expect(JSON.parse(await cli(['runs', 'show', runId, '--json'])).meta.stopOwed).toEqual(['h1']);
  });

  it('History marks the run under its status, with the sentence as its title; the run view says it above the run', async () => {
    const { page, serve } = ui();
    const sentence = guiWording('stop-owed', 'h1')!;
    expect(sentence).toMatch(/History's next refresh/);
    await page.goto(serve.url);
    await page.getByTestId('nav-history').click();
    const owed = page.locator(`[data-testid=history-row][data-run-id="${runId}"] [data-testid=stop-owed]`);
    await expect.poll(() => owed.textContent(), { timeout: 30_000 }).toBe('stop owed to h1');
    expect(await owed.getAttribute('title')).toBe(sentence);
    for (const [w, h] of [[1280, 800], [1920, 1080]] as const) {
      await page.setViewportSize({ width: w, height: h });
      writeFileSync(join(ARTIFACTS, `stop-owed-history-${w}x${h}.png`), await page.screenshot());
    }
    // The run's own page, opened fresh (a reload, a new tab): the note comes with Live's run list.
    const fresh = await ui().newPage();
    await fresh.goto(`${serve.url}#/runs/${runId}`);
    await expect.poll(() => fresh.getByTestId('run-stop-owed').textContent(), { timeout: 30_000 }).toBe(sentence);
    writeFileSync(join(ARTIFACTS, 'stop-owed-run-1280x800.png'), await fresh.screenshot());
  });
});
