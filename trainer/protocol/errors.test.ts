import { describe, expect, it } from 'vitest';
import { CohortError, ERROR_CODE_RE, toErrorInfo } from './errors';

class HostError extends CohortError {
  constructor(message: string, hint: string) {
    super('host-down', message, { hint, fatal: false });
    this.name = 'HostError';
  }
}

describe('CohortError', () => {
  it('carries code, hint, fatal and cause', () => {
    const cause = new Error('ECONNREFUSED');
    const e = new CohortError('ssh-refused', 'h1: connection refused', { hint: 'is sshd running?', cause });
    expect([e.code, e.hint, e.fatal, e.cause, e.message]).toEqual(['ssh-refused', 'is sshd running?', true, cause, 'h1: connection refused']);
    expect(e).toBeInstanceOf(Error);
  });

  it('crosses a process as {name, code, message, hint} and comes back with the same fields', () => {
    const wire = JSON.parse(JSON.stringify(new HostError('h2 is down', 'power it on')));
    expect(wire).toEqual({ name: 'HostError', code: 'host-down', message: 'h2 is down', hint: 'power it on' });
    const back = CohortError.fromInfo(wire);
    expect([back.name, back.code, back.message, back.hint]).toEqual(['HostError', 'host-down', 'h2 is down', 'power it on']);
  });

  it('toErrorInfo gives any thrown value a code', () => {
    expect(toErrorInfo(new Error('plain'))).toEqual({ name: 'Error', code: 'error', message: 'plain' });
    expect(toErrorInfo('text', 'bad-argument')).toEqual({ code: 'bad-argument', message: 'text' });
    expect(toErrorInfo(Object.assign(new Error('in use'), { code: 'EADDRINUSE' })).code).toBe('EADDRINUSE');
  });

  it('toErrorInfo keeps the host an error names and the run a failed launch was recorded as (issue 22: the GUI names the host, links the run)', () => {
    const e = Object.assign(new CohortError('ssh-refused', 'h1: connection refused'), { host: 'h1' });
    Object.defineProperty(e, 'runId', { value: '20261126-101010-abcd', enumerable: false }); // as startRun adds it
    expect(toErrorInfo(e)).toEqual({ name: 'CohortError', code: 'ssh-refused', message: 'h1: connection refused', host: 'h1', runId: '20261126-101010-abcd' });
    expect(toErrorInfo(Object.assign(new Error('x'), { host: 42, runId: '' }))).toEqual({ name: 'Error', code: 'error', message: 'x' });
  });

  it('codes are kebab-case', () => {
    expect(ERROR_CODE_RE.test('ssh-host-key-changed')).toBe(true);
    expect(ERROR_CODE_RE.test('PEER_LOST')).toBe(false);
  });
});
