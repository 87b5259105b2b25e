// The ring's refusal frame is the one error shape (issue 24 item 5): {code, message, hint?, host?,
// rank?} flat beside `t`, read by a rank of this version and (without the new fields) by a v3 one.
import { describe, expect, it } from 'vitest';
import { ControlReader, encodeControl, rejectedError, rejectFrame } from './control-frames';
import { CollectiveError } from './errors';

const roundTrip = (m: Parameters<typeof encodeControl>[0]) => new ControlReader().push(encodeControl(m));

describe('control frames: reject', () => {
  it("carries the refusal's code, message, hint and the rank it concerns; the receiver's error has them", () => {
    const refusal = new CollectiveError('rendezvous-mismatch', 'rank 1 on h2 speaks collective protocol v2 but rank 0 speaks v3', { hint: 'deploy the same trainer build to every host' });
    const frame = rejectFrame(refusal, { host: 'h2', rank: 1 });
    const [got] = roundTrip(frame);
    expect(got).toEqual({ t: 'reject', code: 'rendezvous-mismatch', message: 'rank 1 on h2 speaks collective protocol v2 but rank 0 speaks v3', hint: 'deploy the same trainer build to every host', host: 'h2', rank: 1 });
    const err = rejectedError(got as Extract<typeof got, { t: 'reject' }>);
    expect(err).toBeInstanceOf(CollectiveError);
    expect(err.code).toBe('rendezvous-mismatch');
    expect(err.hint).toBe('deploy the same trainer build to every host');
    expect(err.message).toBe(refusal.message); // not the hint twice
  });

  it('reads a refusal as older ranks send it ({t, message, code}); an unknown code reads as protocol', () => {
    const [old] = roundTrip({ t: 'reject', message: 'RANK=1 registered twice', code: 'rendezvous-mismatch' });
    expect(old).toEqual({ t: 'reject', message: 'RANK=1 registered twice', code: 'rendezvous-mismatch' });
    const err = rejectedError(old as Extract<typeof old, { t: 'reject' }>);
    expect([err.code, err.message, err.hint]).toEqual(['rendezvous-mismatch', 'RANK=1 registered twice', undefined]);
    expect(rejectedError({ t: 'reject', message: 'x', code: 'something-new' }).code).toBe('protocol');
  });
});
