// Host commands answer with JSON lines among other output (a site's notices, logs): the last line
// that parses is the answer. One rule for the client (electron/core) and the agents (trainer/agent).

export function lastJson<T>(text: string): T | undefined {
  const lines = text.split('\n').filter((l) => l.trim().startsWith('{'));
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      return JSON.parse(lines[i]!) as T;
    } catch {
      // not JSON after all
    }
  }
  return undefined;
}
