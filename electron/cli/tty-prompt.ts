// Passphrase prompts for encrypted SSH keys: asked on the controlling terminal without echo,
// never stored. Without a TTY (CI, pipes) there is nobody to ask: the key fails with a hint.
import type { PassphraseProvider } from '../core/ssh';

export function ttyPassphraseProvider(input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): PassphraseProvider | undefined {
  if (!input.isTTY) return undefined;
  return ({ keyPath, host, attempt }) =>
    new Promise((resolve) => {
      // Echo off before the prompt shows: an answer typed the moment the prompt appears was echoed
      // (seen in CI on a real pty: the passphrase on screen).
      input.setRawMode(true);
      output.write(`${attempt > 1 ? 'Wrong passphrase. ' : ''}Passphrase for ${keyPath} (for ${host}): `);
      input.resume();
      let typed = '';
      const onData = (buf: Buffer) => {
        for (const ch of buf.toString('utf8')) {
          if (ch === '\r' || ch === '\n') return finish(typed);
          if (ch === '\u0003' || ch === '\u0004') return finish(undefined); // Ctrl-C / Ctrl-D: give up
          if (ch === '\u007f') typed = typed.slice(0, -1);
          else typed += ch;
        }
      };
      const finish = (v: string | undefined) => {
        input.off('data', onData);
        input.setRawMode(false);
        input.pause();
        output.write('\n');
        resolve(v);
      };
      input.on('data', onData);
    });
}

/** A yes/no question on the terminal (default no); undefined without a TTY (nobody to ask). */
export function ttyConfirm(question: string, input: NodeJS.ReadStream = process.stdin, output: NodeJS.WritableStream = process.stderr): Promise<boolean> | undefined {
  if (!input.isTTY) return undefined;
  output.write(`${question} [y/N] `);
  return new Promise((resolve) => {
    input.setEncoding('utf8');
    input.resume();
    input.once('data', (answer: string) => {
      input.pause();
      resolve(/^\s*y(es)?\s*$/i.test(answer));
    });
  });
}
