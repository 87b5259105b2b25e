// Assertion helper for the SSH tests: a connection attempt that must fail, with an SshError.
import { expect } from 'vitest';
import { SshError, type HostSession } from '../../electron/core/ssh';

/** Awaits a connect that must fail; disposes the session and fails the test if it connected. */
export async function connectFailure(p: Promise<HostSession>): Promise<SshError> {
  const err = await p.then(
    (s) => {
      s.dispose();
      throw new Error('connected, but should have failed');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SshError);
  return err as SshError;
}
