// Hosts that are slow in one way, for real-parts tests of races (a loaded machine, a slow link): a
// shell in front of the real `node` runs the real host command, only later or more slowly. The
// thinnest fake there is: everything the host does is real.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A `node` whose host command `command` (run-status, run-start...) starts `seconds` late. */
export function slowCommandNode(dir: string, command: string, seconds: number): string {
  const path = join(dir, `slow-${command}-node.sh`);
  writeFileSync(path, `#!/bin/sh\ncase "$2" in ${command}) sleep ${seconds} ;; esac\nexec ${JSON.stringify(process.execPath)} "$@"\n`);
  chmodSync(path, 0o755);
  return path;
}

/**
 * A `node` whose `run-follow` output pauses `seconds` after each line naming `type` (a record read
 * over a slow link: the lines after it arrive late). Its exit code is the real command's.
 */
export function slowFollowNode(dir: string, type: string, seconds: number): string {
  const path = join(dir, `slow-follow-${type}-node.sh`);
  const node = JSON.stringify(process.execPath);
  writeFileSync(
    path,
    `#!/bin/bash\nset -o pipefail\nif [ "$2" != run-follow ]; then exec ${node} "$@"; fi\n${node} "$@" | while IFS= read -r l; do printf '%s\\n' "$l"; case "$l" in *'"type":"${type}"'*) sleep ${seconds} ;; esac; done\n`,
  );
  chmodSync(path, 0o755);
  return path;
}
