// One control connection (rank 0 ↔ rank k): framed JSON messages, read either sequentially
// (`next`, during the rendezvous) or by a handler (afterwards), plus liveness bookkeeping.
import type { Socket } from 'node:net';
import { ControlReader, encodeControl, type ControlMessage } from './control-frames';
import { abortedError, CollectiveError, errnoCode } from './errors';

export class ControlChannel {
  /** Last time any byte arrived (heartbeats included). */
  lastRecv = Date.now();
  /** The longest silence between two arrivals so far (ms): what the hang limit scales with. */
  maxGapMs = 0;
  closedReason: string | undefined;
  private readonly reader = new ControlReader();
  private readonly queue: ControlMessage[] = [];
  private waiter: ((m: ControlMessage | Error) => void) | undefined;
  private handler: ((m: ControlMessage) => void) | undefined;
  private closeListener: ((reason: string) => void) | undefined;

  constructor(readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1000);
    socket.on('data', (chunk: Buffer) => {
      const now = Date.now();
      this.maxGapMs = Math.max(this.maxGapMs, now - this.lastRecv);
      this.lastRecv = now;
      let msgs: ControlMessage[];
      try {
        msgs = this.reader.push(chunk);
      } catch (err) {
        this.close(err instanceof Error ? err.message : String(err));
        socket.destroy();
        return;
      }
      for (const m of msgs) this.deliver(m);
    });
    socket.on('error', (err) => this.close(`control connection error ${errnoCode(err)}`));
    socket.on('end', () => this.close('control connection closed by the peer'));
    socket.on('close', () => this.close('control connection closed'));
  }

  private deliver(m: ControlMessage): void {
    if (this.handler) this.handler(m);
    else if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w(m);
    } else this.queue.push(m);
  }

  private close(reason: string): void {
    if (this.closedReason !== undefined) return;
    this.closedReason = reason;
    const w = this.waiter;
    this.waiter = undefined;
    w?.(new CollectiveError('peer-lost', reason));
    this.closeListener?.(reason);
  }

  send(msg: ControlMessage): void {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(encodeControl(msg));
  }

  /** Next message, for sequential protocols. Rejects if the connection closes or `signal` fires. */
  next(signal: AbortSignal): Promise<ControlMessage> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    if (this.closedReason !== undefined) return Promise.reject(new CollectiveError('peer-lost', this.closedReason));
    if (signal.aborted) return Promise.reject(abortedError('waiting for a control message', signal));
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.waiter = undefined;
        reject(abortedError('waiting for a control message', signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiter = (m) => {
        signal.removeEventListener('abort', onAbort);
        if (m instanceof Error) reject(m);
        else resolve(m);
      };
    });
  }

  /** Switch to push mode; queued messages are delivered first. */
  listen(handler: (m: ControlMessage) => void, onClose: (reason: string) => void): void {
    this.handler = handler;
    this.closeListener = onClose;
    for (const m of this.queue.splice(0)) handler(m);
    if (this.closedReason !== undefined) onClose(this.closedReason);
  }
}
