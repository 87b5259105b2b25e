// The history's error is the one error shape (issue 24 item 5); records written before read as it.
import { describe, expect, it } from 'vitest';
import { decodeRunError, runErrorOf, runErrorText } from './run-error';

describe('run error', () => {
  it("from a host's or event's error: History's sentence as message, host, rank, code and hint apart", () => {
    expect(runErrorOf({ host: 'h2', rank: 1, message: 'killed by SIGKILL', code: 'rank-exited', hint: 'check its log' })).toEqual({ code: 'rank-exited', message: 'rank 1 on h2: killed by SIGKILL', hint: 'check its log', host: 'h2', rank: 1 });
    expect(runErrorOf({ host: 'h1', rank: -1, message: 'unreachable' })).toEqual({ message: 'h1: unreachable', host: 'h1', rank: -1 });
  });

  it('reads the string records of before: the hint taken out of the sentence, the code from errorCode, a failed launch its host', () => {
    expect(decodeRunError('rank 0 on h1: exited with code 1', 'rank-exited')).toEqual({ code: 'rank-exited', message: 'rank 0 on h1: exited with code 1' });
    expect(decodeRunError('launch failed on 10.0.0.2: connect ECONNREFUSED (hint: start sshd)', 'ssh-refused')).toEqual({ code: 'ssh-refused', message: 'launch failed on 10.0.0.2: connect ECONNREFUSED', hint: 'start sshd', host: '10.0.0.2' });
    expect(decodeRunError('h1 has no record of this run')).toEqual({ message: 'h1 has no record of this run' });
    expect(decodeRunError('', 'x')).toBeUndefined();
    expect(decodeRunError(undefined)).toBeUndefined();
    expect(decodeRunError(42)).toBeUndefined();
  });

  it('reads its own shape, dropping what is not a field of it', () => {
    expect(decodeRunError({ code: 'host-lost', message: 'h2: gone', hint: 'bring h2 back', host: 'h2', rank: -1, extra: 1 })).toEqual({ code: 'host-lost', message: 'h2: gone', hint: 'bring h2 back', host: 'h2', rank: -1 });
  });

  it("one line for the CLI and CSV: the hint in brackets unless the message says it", () => {
    expect(runErrorText({ message: 'h1: x', hint: 'do y' })).toBe('h1: x (hint: do y)');
    expect(runErrorText({ message: 'h1: x; do y', hint: 'do y' })).toBe('h1: x; do y');
  });
});
