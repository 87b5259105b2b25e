// Output to a closed pipe (`cohort run … | head -2`, `cohort runs list | head -1`) ends quietly,
// as other Unix tools do, instead of an EPIPE stack trace. The process does not die: a run goes
// on to its end and is recorded (its later output is dropped; stderr still says how it ended).
export function quietOnClosedPipe(stream: NodeJS.WriteStream): NodeJS.WriteStream {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') return; // reader gone: drop output
    throw err;
  });
  return stream;
}
