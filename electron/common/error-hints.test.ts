import { describe, expect, it } from 'vitest';
import { hintBesides, hintFor, hintLines, messageFor } from './error-hints';

describe('hints per surface (issue 22 item 8)', () => {
  const unknownKey = { code: 'ssh-host-key-unknown', message: 'h1: unknown host key for 10.0.0.2: ssh-ed25519 SHA256:x', hint: 'Verify the fingerprint, then connect with --accept-new-host-key to record it in /k' };

  it('one sentence per code: the terminal in its words (then core\'s specifics), the dashboard in its own, never a CLI flag', () => {
    expect(hintFor(unknownKey, 'cli')).toMatch(/^Compare the fingerprint .*then connect again with --accept-new-host-key/);
    expect(hintLines(unknownKey)).toEqual([hintFor(unknownKey, 'cli'), unknownKey.hint]);
    expect(hintFor(unknownKey, 'gui')).toContain('Trust and remember');
    for (const code of ['ssh-host-key-unknown', 'ssh-host-key-changed', 'local-profile']) expect(hintFor({ code, hint: '--x' }, 'gui')).not.toMatch(/--[a-z]/);
  });

  it('takes the CLI\'s sentence out of an SSH message where the dashboard words its own hint', () => {
    const ssh = { ...unknownKey, message: `${unknownKey.message}. ${unknownKey.hint}\n(the launch stopped preparing h2)` };
    expect(messageFor(ssh, 'gui')).toBe(`${unknownKey.message}\n(the launch stopped preparing h2)`);
    expect(messageFor(ssh, 'cli')).toBe(ssh.message);
    expect(hintBesides(ssh, 'gui')).toContain('Trust and remember');
  });

  it('words every code for the dashboard, naming the host; keeps core\'s hint for a code it does not know (the table test forbids those)', () => {
    expect(hintFor({ code: 'deploy-failed', host: 'h2', hint: 'check the disk and permissions on the host' }, 'gui')).toMatch(/^Deploying the trainer to h2 failed: check the host's disk/);
    expect(hintFor({ code: 'a-code-from-the-future', hint: 'check the disk' }, 'gui')).toBe('check the disk');
    expect(hintFor({ hint: 'h' }, 'gui')).toBe('h');
    expect(hintBesides({ code: 'x', message: 'it failed: check the disk', hint: 'check the disk' }, 'gui')).toBe('');
  });
});
