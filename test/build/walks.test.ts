// ARCHITECTURE.md "Two walks through the code" against the code (issue 24: docs that cannot drift).
// Each walk is a numbered list of hops, one per line, 1..N; every `path:name` it names (a hop or a
// helper) must be a file of the repository that defines that name (a class's method: the class
// and the method); and the last column of the walk's table (the current count) must say N. A
// function renamed, moved or split away, or a hop cut without recounting, fails here.
// COHORT_WALKS_DOC=path checks another copy of the document (to see it fail on an older one).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli';

const doc = readFileSync(process.env.COHORT_WALKS_DOC ?? join(ROOT, 'ARCHITECTURE.md'), 'utf8');

/** The section's lines, split into the two walks (from their bold heading to the next one). */
function walks(): { name: string; lines: string[] }[] {
  const start = doc.indexOf('## Two walks through the code');
  const end = doc.indexOf('\n## ', start + 1);
  expect(start, 'ARCHITECTURE.md has a "Two walks through the code" section').toBeGreaterThanOrEqual(0);
  const section = doc.slice(start, end < 0 ? undefined : end).split('\n');
  const heads = section.map((l, i) => (/^\*\*\((a|b)\)/.test(l) ? i : -1)).filter((i) => i >= 0);
  return heads.map((h, k) => ({ name: section[h]!.slice(2, 5), lines: section.slice(h + 1, heads[k + 1] ?? section.length) }));
}

/** A definition of `name` in `text`: a function, a method, a field or const holding a function. */
function defines(text: string, name: string): boolean {
  const n = name.replace(/[$]/g, '\\$');
  return new RegExp(`((function|class)\\s+${n}\\b|\\b${n}\\s*(\\(|<|=|:))`).test(text);
}

describe('the two walks in ARCHITECTURE.md', () => {
  const all = walks();

  it('has both walks', () => {
    expect(all.map((w) => w.name)).toEqual(['(a)', '(b)']);
  });

  for (const w of all) {
    describe(`walk ${w.name}`, () => {
      const hops = w.lines.filter((l) => /^\d+\.\s/.test(l));

      it('numbers its hops 1..N, one per line', () => {
        expect(hops.length).toBeGreaterThan(0);
        expect(hops.map((l) => Number(/^(\d+)\./.exec(l)![1]))).toEqual(hops.map((_, i) => i + 1));
        // Another hop started inside a line ("13. … → 14. …") would be counted as one.
        for (const l of hops) expect(l.slice(3), l).not.toMatch(/\s\d+\.\s`/);
      });

      it("names files that exist and names they define", () => {
        const refs = hops.flatMap((l) => [...l.matchAll(/`([\w./-]+\/[\w.-]+\.(?:ts|svelte|mjs))(?::([\w.$]+))?`/g)].map((m) => ({ file: m[1]!, name: m[2] })));
        expect(refs.length).toBeGreaterThanOrEqual(hops.length);
        const wrong: string[] = [];
        for (const { file, name } of refs) {
          const path = join(ROOT, file);
          if (!existsSync(path)) {
            wrong.push(`${file}: no such file`);
            continue;
          }
          if (!name) continue;
          const text = readFileSync(path, 'utf8');
          const parts = name.split('.');
          const member = parts[parts.length - 1]!;
          if (parts.length > 1 && !new RegExp(`class\\s+${parts[0]}\\b`).test(text)) wrong.push(`${file}: no class ${parts[0]}`);
          if (!defines(text, member)) wrong.push(`${file}: nothing named ${member}`);
        }
        expect(wrong).toEqual([]);
      });

      it("each hop's line starts with the hop's own file and function", () => {
        for (const l of hops) expect(l, l).toMatch(/^\d+\.\s`[\w./-]+\/[\w.-]+\.(ts|svelte)(:[\w.$]+)?`/);
      });

      it("the table's current count (its last column) is the number of hops listed", () => {
        const row = w.lines.find((l) => l.startsWith('| hops |'));
        expect(row, 'a "| hops |" row in the walk\'s table').toBeDefined();
        const cells = row!.split('|').map((c) => c.trim()).filter(Boolean);
        expect(Number(/^\d+/.exec(cells[cells.length - 1]!)?.[0])).toBe(hops.length);
      });
    });
  }
});
