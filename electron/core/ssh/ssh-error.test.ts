import { describe, expect, it } from 'vitest';
import { SshError, classifySshError } from './ssh-error';

const host = { name: 'h2', address: 'gpu2.lab', port: 2222, user: 'alice' };
const ctx = { host, connected: false, ready: false, timeoutMs: 5000 };
const err = (props: Record<string, unknown>) => Object.assign(new Error(String(props.message ?? 'x')), props);

describe('classifySshError', () => {
  it('maps socket errnos and ssh2 levels to codes that name the host', () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ code: 'ENOTFOUND', level: 'client-socket' }, 'ssh-resolve', /^h2 \(alice@gpu2\.lab:2222\): cannot resolve host name "gpu2\.lab"/],
      [{ code: 'EAI_AGAIN' }, 'ssh-resolve', /cannot resolve/],
      [{ code: 'ECONNREFUSED', level: 'client-socket' }, 'ssh-refused', /connection refused on port 2222/],
      [{ code: 'EHOSTUNREACH' }, 'ssh-unreachable', /no route to gpu2\.lab/],
      [{ code: 'ETIMEDOUT' }, 'ssh-timeout', /no answer from gpu2\.lab:2222 within 5000 ms/],
      [{ level: 'client-timeout', message: 'Timed out while waiting for handshake' }, 'ssh-timeout', /no answer/],
      [{ level: 'protocol', message: 'Bad packet length' }, 'ssh-protocol', /SSH protocol error: Bad packet length/],
    ];
    for (const [props, code, re] of cases) {
      const e = classifySshError(err(props), ctx);
      expect(e).toBeInstanceOf(SshError);
      expect(e.code).toBe(code);
      expect(e.host).toBe('h2');
      expect(e.message).toMatch(re);
    }
    expect(classifySshError(err({ level: 'client-timeout' }), { ...ctx, connected: true }).message).toMatch(/SSH handshake did not finish within 5000 ms/);
    expect(classifySshError(err({ level: 'client-timeout', message: 'Keepalive timeout' }), { ...ctx, ready: true }).code).toBe('ssh-disconnected');
  });
});
