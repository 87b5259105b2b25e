// How `cohort` prints what to do about an error: the sentence for its code from the one wording
// table the dashboard reads too (common/error-wording.ts, in the terminal's words), then core's own
// hint when it says more (common/error-hints.ts hintLines). Every error line the CLI prints with a
// hint goes through here.
import { hintLines, type HintedError } from '../common';

/** `  hint: SENTENCE\n` and core's own hint aligned under it; '' when the error has neither. */
export function hintText(e: HintedError & { message: string }, bold: (s: string) => string = (s) => s): string {
  const [first, ...more] = hintLines(e);
  if (!first) return '';
  return `  ${bold('hint:')} ${first}\n${more.map((l) => `        ${l}\n`).join('')}`;
}
