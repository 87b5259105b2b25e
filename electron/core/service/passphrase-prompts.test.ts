import { describe, expect, it } from 'vitest';
import type { PassphraseRequestMessage } from '../../common';
import { PassphrasePrompts } from './passphrase-prompts';

const req = { keyPath: '/k/id_ed25519', host: 'h1', attempt: 1 };

describe('PassphrasePrompts', () => {
  it('gives up at once when no client listens (as a CLI without a terminal)', async () => {
    const p = new PassphrasePrompts();
    expect(await p.ask(req)).toBeUndefined();
  });

  it('pushes the request, resolves with the answer, then pushes it closed; a second answer is refused', async () => {
    const p = new PassphrasePrompts();
    const seen: PassphraseRequestMessage[] = [];
    p.onRequest((m) => seen.push(m));
    const answer = p.ask(req);
    expect(seen).toEqual([{ id: expect.any(String), host: 'h1', keyPath: '/k/id_ed25519', attempt: 1, open: true }]);
    p.answer(seen[0]!.id, 'secret');
    expect(await answer).toBe('secret');
    expect(seen[1]).toEqual({ ...seen[0], open: false });
    expect(JSON.stringify(seen)).not.toContain('secret');
    expect(() => p.answer(seen[0]!.id, 'again')).toThrow(/no longer open/);
  });

  it('null cancels; an unanswered request times out; dispose settles what is open', async () => {
    const p = new PassphrasePrompts(50);
    const seen: PassphraseRequestMessage[] = [];
    p.onRequest((m) => seen.push(m));
    const cancelled = p.ask(req);
    p.answer(seen[0]!.id, null);
    expect(await cancelled).toBeUndefined();
    expect(await p.ask(req)).toBeUndefined(); // timed out after 50 ms
    expect(seen.filter((m) => !m.open)).toHaveLength(2);
    const open = p.ask(req);
    p.dispose();
    expect(await open).toBeUndefined();
  });
});
