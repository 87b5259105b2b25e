#!/usr/bin/env node
// The `cohort` command. The CLI is built by `npm install` (prepare) or `npm run build`.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const cli = join(dirname(dirname(fileURLToPath(import.meta.url))), 'dist', 'cli.mjs');
if (!existsSync(cli)) {
  process.stderr.write(`cohort: ${cli} is missing; run "npm run build" in the Cohort folder first.\n`);
  process.exit(2);
}
await import(pathToFileURL(cli).href);
