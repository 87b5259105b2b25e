// The suite's one headless Chromium (test/e2e/chromium-lane.ts starts this script, once, the first time
// a test file asks): playwright-core's browser server with the args given as JSON in argv[2]. Prints
// one JSON line { ws, pid } (the endpoint files connect() to; the browser's pid, which leads its own
// process group and session: playwright starts it detached), then closes the browser when its stdin
// ends: the lane's close(), or the vitest process dying (the pipe closes with it), so a killed run
// leaves no Chromium behind.
import { chromium } from 'playwright-core';

const { executablePath, args } = JSON.parse(process.argv[2]);
const server = await chromium.launchServer({ executablePath, headless: true, args });
process.stdout.write(JSON.stringify({ ws: server.wsEndpoint(), pid: server.process().pid }) + '\n');
process.stdin.resume();
process.stdin.on('end', () => {
  void server.close().finally(() => process.exit(0));
});
