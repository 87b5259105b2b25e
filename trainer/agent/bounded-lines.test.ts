// A real child process printing a 50 MB line with no newline, then a normal line: the agent's
// splitter hands over the first 16 KiB (marked as cut) and the next line intact, holding at most
// one capped line at a time.
import { spawn } from 'node:child_process';
import { expect, it } from 'vitest';
import { MAX_LOG_LINE_BYTES, boundedLines } from './bounded-lines';

it('caps a rank log line at 16 KiB and keeps the lines after it', async () => {
  const child = spawn(process.execPath, ['-e', "process.stdout.write('a'.repeat(50*1024*1024)); process.stdout.write('\\nnext line\\nlast')"], { stdio: ['ignore', 'pipe', 'ignore'] });
  const lines: string[] = [];
  const rss0 = process.memoryUsage().rss;
  boundedLines(child.stdout, MAX_LOG_LINE_BYTES, (l) => lines.push(l));
  await new Promise((r) => child.stdout.on('end', r));
  expect(lines).toHaveLength(3);
  expect(lines[0]).toBe(`${'a'.repeat(MAX_LOG_LINE_BYTES)}… [${50 * 1024 * 1024 - MAX_LOG_LINE_BYTES} bytes cut]`);
  expect(lines.slice(1)).toEqual(['next line', 'last']);
  expect(process.memoryUsage().rss - rss0).toBeLessThan(40 * 1024 * 1024); // readline held the whole 50 MB line (x2 as a string)
});
