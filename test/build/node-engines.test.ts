// Issue 22 item 12: `npm install` warned that two build dependencies want Node >= 22.12 while the
// README said >= 20.19. The truth, kept by this test against the real lock file: every installed
// package accepts the package's own minimum (engines.node) except those only electron-builder pulls in
// (for `npm run dist`), whose strictest minimum `npm run dist` checks first and the README states.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

type Version = [number, number, number];
const parse = (v: string): Version => {
  const [a, b, c] = v.replace(/^v/, '').split('.').map((n) => (/^\d+$/.test(n) ? Number(n) : 0));
  return [a ?? 0, b ?? 0, c ?? 0];
};
const cmp = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** Whether `version` satisfies an npm engines range (the subset of semver the lock file uses). */
function satisfies(version: string, range: string): boolean {
  const v = parse(version);
  return range.split('||').some((set) => {
    const comparators = set.trim().replace(/(>=|<=|>|<|=)\s+/g, '$1').split(/\s+/).filter(Boolean);
    return comparators.every((c) => {
      if (c === '*' || c === 'x') return true;
      const m = /^(>=|<=|>|<|=|\^|~)?v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?$/.exec(c);
      if (!m) throw new Error(`engines range ${JSON.stringify(range)}: comparator ${JSON.stringify(c)} not understood`);
      const [, op = '', maj, min, pat] = m;
      const wild = (s: string | undefined) => s === undefined || s === 'x' || s === '*';
      const base: Version = [Number(maj), wild(min) ? 0 : Number(min), wild(pat) ? 0 : Number(pat)];
      const d = cmp(v, base);
      if (op === '>=') return d >= 0;
      if (op === '>') return d > 0;
      if (op === '<=') return d <= 0;
      if (op === '<') return d < 0;
      if (op === '^') return d >= 0 && v[0] === base[0];
      if (op === '~') return d >= 0 && v[0] === base[0] && v[1] === base[1];
      // plain or '=': a partial version (20, 6.*) matches its prefix
      if (wild(min)) return v[0] === base[0];
      if (wild(pat)) return v[0] === base[0] && v[1] === base[1];
      return d === 0;
    });
  });
}

type LockEntry = { engines?: { node?: string }; dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
const packages = lock.packages as Record<string, LockEntry>;
const nameOf = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);

/** Package names reachable from `root` through the lock's dependency lists (by name: close enough for a closure check). */
function closure(root: string): Set<string> {
  const byName = new Map<string, LockEntry[]>();
  for (const [path, entry] of Object.entries(packages)) if (path) byName.set(nameOf(path), [...(byName.get(nameOf(path)) ?? []), entry]);
  const seen = new Set<string>();
  const todo = [root];
  while (todo.length) {
    const name = todo.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    for (const e of byName.get(name) ?? []) todo.push(...Object.keys({ ...e.dependencies, ...e.optionalDependencies }));
  }
  return seen;
}

const minimum = /^>=\s*(\d+\.\d+(?:\.\d+)?)$/.exec(pkg.engines.node)?.[1];

describe('the Node version Cohort needs, said truly', () => {
  it('the range checker reads the lock file the way npm does', () => {
    expect(satisfies('20.19.0', '^20.19.0 || >=22.12.0')).toBe(true);
    expect(satisfies('20.18.9', '^20.19.0 || >=22.12.0')).toBe(false);
    expect(satisfies('22.11.0', '>=22.12.0')).toBe(false);
    expect(satisfies('20.19.0', '18 || 20 || >=22')).toBe(true);
    expect(satisfies('20.19.0', '6.* || 8.* || >= 10.*')).toBe(true);
    expect(satisfies('7.1.0', '>=6 <7 || >=8')).toBe(false);
    expect(satisfies('20.19.0', '^20.0.0 || ^22.0.0 || >=24.0.0')).toBe(true);
  });

  it("only electron-builder's packages want more than engines.node, and the README and `npm run dist` say how much", () => {
    expect(minimum, 'package.json engines.node is ">=X.Y"').toBeDefined();
    const newer = Object.entries(packages)
      .filter(([path, e]) => path && e.engines?.node && !satisfies(minimum!, e.engines.node))
      .map(([path, e]) => ({ name: nameOf(path), range: e.engines!.node! }));
    const builder = closure('electron-builder');
    const others = new Set(
      Object.keys({ ...pkg.dependencies, ...pkg.devDependencies })
        .filter((d) => d !== 'electron-builder')
        .flatMap((d) => [...closure(d)]),
    );
    for (const { name, range } of newer) {
      expect(builder.has(name), `${name} (node ${range}) is not from electron-builder`).toBe(true);
      expect(others.has(name), `${name} (node ${range}) is needed outside packaging too: raise engines.node`).toBe(false);
    }
    // The strictest of them is what `npm run dist` checks and what the README states.
    const strictest = newer
      .map(({ range }) => /^>=\s*(\d+\.\d+)/.exec(range)?.[1] ?? range)
      .sort((a, b) => cmp(parse(b), parse(a)))[0];
    if (strictest) {
      expect(pkg.scripts.dist).toContain(`require-node.mjs ${strictest} `);
      expect(readme).toContain(`Node ≥ ${strictest}`);
    }
    expect(readme).toContain(`Node ≥ ${minimum}`);
  });

  it('`npm run dist` refuses an older Node with one line saying what to do, and passes a new enough one', () => {
    const script = join(ROOT, 'scripts/require-node.mjs');
    const old = spawnSync(process.execPath, [script, '22.12', 'npm run dist (electron-builder)'], { env: { ...process.env, COHORT_NODE_VERSION: 'v20.19.0' }, encoding: 'utf8' });
    expect(old.status).toBe(1);
    expect(old.stderr).toMatch(/npm run dist \(electron-builder\) needs Node >= 22\.12 \(this is Node 20\.19\.0\).*install a newer Node/);
    execFileSync(process.execPath, [script, '22.12', 'x'], { env: { ...process.env, COHORT_NODE_VERSION: 'v22.12.0' } });
    execFileSync(process.execPath, [script, '22.12', 'x'], { env: { ...process.env, COHORT_NODE_VERSION: 'v24.0.1' } });
  });
});
