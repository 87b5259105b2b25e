// The event protocol: versioned JSON lines from the trainer (rank 0 and the host agents) to
// every consumer (core, CLI, dashboard, run history). This is the one import place; the protocol
// is defined once, in event-types.ts (shapes and constants), event-decoders.ts (runtime
// validation per type) and event-lines.ts (decodeEvent, the line decoder). Nothing else declares
// an event shape. Fields may be added, never renamed.
import type { StepEvent } from './event-types';

export * from './event-types';
export { decodeEvent, isEventType, UnknownEventType, EventLineDecoder, type LineResult } from './event-lines';

/** The seeds' human line: `Epoch: 0, Step: 20, Loss: 4.87, Throughputs: 27.9 samples/s`; with the run's total, `Step: 120/500`. */
export function formatStepLine(e: StepEvent, totalSteps?: number): string {
  const loss = e.loss === null ? 'nan' : e.loss.toFixed(4);
  return `Epoch: ${e.epoch}, Step: ${e.step}${totalSteps ? `/${totalSteps}` : ''}, Loss: ${loss}, Throughputs: ${e.globalSamplesPerSec.toFixed(1)} samples/s`;
}
