// Colour for the CLI's human output: only when the stream is a terminal, never with NO_COLOR set
// (https://no-color.org: any non-empty value) or TERM=dumb. Pipes and files get plain text.

export interface Style {
  readonly enabled: boolean;
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  yellow(s: string): string;
  green(s: string): string;
}

export function colorEnabled(stream: NodeJS.WritableStream | undefined, env: NodeJS.ProcessEnv): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.TERM === 'dumb') return false;
  return !!(stream as { isTTY?: boolean } | undefined)?.isTTY;
}

export function styleFor(stream: NodeJS.WritableStream | undefined, env: NodeJS.ProcessEnv): Style {
  const on = colorEnabled(stream, env);
  const sgr = (open: number, close: number) => (s: string) => (on ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  return { enabled: on, bold: sgr(1, 22), dim: sgr(2, 22), red: sgr(31, 39), yellow: sgr(33, 39), green: sgr(32, 39) };
}
