// Passphrases for encrypted SSH keys asked of the dashboard (issue 14 item 5): a KeyRing's
// PassphraseProvider that turns each request into an `onPassphraseRequest` push to every connected
// client and waits for one `answerPassphrase`. The passphrase lives only in the pending promise
// until the KeyRing has decrypted the key with it: it is never stored, logged or sent back out.
import { randomUUID } from 'node:crypto';
import { Emitter, type Disposable } from '../../../trainer/protocol';
import { ApiCallError, type PassphraseRequestMessage } from '../../common';
import type { PassphraseProvider } from '../ssh';

interface Pending {
  request: PassphraseRequestMessage;
  resolve: (passphrase: string | undefined) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class PassphrasePrompts implements Disposable {
  private readonly pending = new Map<string, Pending>();
  private readonly emitter = new Emitter<PassphraseRequestMessage>();
  /** Every request when it opens, and again (open: false) when it is answered, cancelled or times out. */
  readonly onRequest = this.emitter.event;
  private disposed = false;

  /** timeoutMs: how long a request waits for an answer before the connection goes on without the key. */
  constructor(private readonly timeoutMs = 120_000) {}

  /** For `new KeyRing(prompts.ask)`. With no client listening it gives up at once (undefined), as a CLI without a terminal does. */
  readonly ask: PassphraseProvider = (req) => {
    if (this.disposed || this.emitter.size === 0) return Promise.resolve(undefined);
    return new Promise<string | undefined>((resolve) => {
      const request: PassphraseRequestMessage = { id: randomUUID(), host: req.host, keyPath: req.keyPath, attempt: req.attempt, open: true };
      const timer = setTimeout(() => this.settle(request.id, undefined), this.timeoutMs);
      timer.unref?.();
      this.pending.set(request.id, { request, resolve, timer });
      this.emitter.fire(request);
    });
  };

  /** A client's answer: the passphrase, or null for "cancel". Unknown ids (answered elsewhere, timed out) are refused. */
  answer(id: string, passphrase: string | null): void {
    if (!this.pending.has(id)) {
      throw new ApiCallError({ code: 'passphrase-request-gone', message: 'this passphrase request is no longer open (answered in another window, or timed out)', hint: 'retry the action that needed the key' });
    }
    this.settle(id, passphrase ?? undefined);
  }

  private settle(id: string, passphrase: string | undefined): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    this.emitter.fire({ ...p.request, open: false });
    p.resolve(passphrase);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const id of [...this.pending.keys()]) this.settle(id, undefined);
    this.emitter.dispose();
  }
}
