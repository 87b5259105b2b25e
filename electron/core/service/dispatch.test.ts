import { describe, expect, it } from 'vitest';
import type { CohortApi } from '../../common';
import { SshError } from '../ssh';
import { dispatchCall } from './dispatch';

// Only the methods a test calls are real; the rest are never reached.
const api = (impl: Partial<CohortApi>) => impl as CohortApi;

describe('dispatchCall errors', () => {
  it('carries name, code and hint of a CohortError across the Api', async () => {
    const r = await dispatchCall(
      api({ probe: async () => Promise.reject(new SshError('ssh-auth', 'h1', 'h1: every authentication method failed', 'add the key to ssh-agent')) }),
      'probe',
      ['lab'],
    );
    expect(r).toMatchObject({ error: { name: 'SshError', code: 'ssh-auth', hint: 'add the key to ssh-agent' } });
  });

  it('gives a plain Error the code "error" and a bad argument the code "bad-argument"', async () => {
    expect(await dispatchCall(api({ listRuns: async () => Promise.reject(new Error('disk gone')) }), 'listRuns', [])).toMatchObject({ error: { code: 'error', message: 'disk gone' } });
    expect(await dispatchCall(api({}), 'probe', [42])).toMatchObject({ error: { code: 'bad-argument' } });
  });
});
