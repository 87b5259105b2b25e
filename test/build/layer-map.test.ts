// The build enforces the layer map (ARCHITECTURE.md "Layers"; issue 11: "a planted wrong import
// fails lint and typecheck"). A file with a wrong import is planted — in memory, at a path inside a
// layer, nothing written to the tree — and checked the way `npm run lint` and `npm run typecheck`
// check it: ESLint with the repository's eslint.config.js, and tsc with that layer's own tsconfig.
// A clean planted file in each layer must pass both, so a check that refused everything would fail.
//
// What each check can see: lint checks import paths, so it catches every wrong import; tsc checks
// environments (no Node types in protocol, common or the renderer), so it catches a wrong import
// only where the imported code needs an environment the layer lacks. Node → Node edges (trainer →
// electron/core, core → electron) are lint-only; the last test pins that down.
import { dirname, join } from 'node:path';
import { ESLint } from 'eslint';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli';

const eslint = new ESLint({ cwd: ROOT });

/** ESLint's error messages for `code` as if it were the file at `rel`. */
async function lint(rel: string, code: string): Promise<string[]> {
  const [r] = await eslint.lintText(code, { filePath: join(ROOT, rel) });
  return (r?.messages ?? []).filter((m) => m.severity === 2).map((m) => `${m.ruleId}: ${m.message}`);
}

/** tsc's errors for the file at `rel` holding `code`, under the layer's tsconfig (its options and types; the planted file and what it imports). */
function typecheck(tsconfig: string, rel: string, code: string): string[] {
  const configPath = join(ROOT, tsconfig);
  const read = ts.readConfigFile(configPath, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(configPath), undefined, configPath);
  const planted = join(ROOT, rel);
  const host = ts.createCompilerHost(parsed.options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => f === planted || fileExists.call(host, f);
  host.readFile = (f) => (f === planted ? code : readFile.call(host, f));
  host.getSourceFile = (f, lang, ...rest) => (f === planted ? ts.createSourceFile(f, code, lang, true) : getSourceFile.call(host, f, lang, ...rest));
  const program = ts.createProgram({ rootNames: [planted], options: { ...parsed.options, noEmit: true }, host });
  return ts.getPreEmitDiagnostics(program).map((d) => `${d.file ? d.file.fileName.slice(ROOT.length + 1) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
}

const cases = [
  {
    layer: 'trainer/protocol',
    tsconfig: 'trainer/protocol/tsconfig.json',
    file: 'trainer/protocol/planted-layer-check.ts',
    wrong: "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n",
    lintSays: 'trainer/protocol is the common layer',
    tscSays: /node:fs/,
    clean: "import { makeEvent } from './events';\nexport const x = makeEvent;\n",
  },
  {
    layer: 'electron/common',
    tsconfig: 'electron/common/tsconfig.json',
    file: 'electron/common/planted-layer-check.ts',
    wrong: "import { resolvePaths } from '../core/paths';\nexport const x = resolvePaths;\n",
    lintSays: "electron/common is the app's contract",
    tscSays: /electron\/core\/paths\.ts: Cannot find (module|name)/,
    clean: "import { makeEvent } from '../../trainer/protocol';\nexport const x = makeEvent;\n",
  },
  {
    layer: 'renderer',
    tsconfig: 'renderer/tsconfig.json',
    file: 'renderer/src/lib/planted-layer-check.ts',
    wrong: "import { resolvePaths } from '../../../electron/core/paths';\nexport const x = resolvePaths;\n",
    lintSays: 'the renderer runs in a sandboxed browser',
    tscSays: /electron\/core\/paths\.ts: Cannot find (module|name)/,
    clean: "import { followRun } from '../../../electron/common';\nexport const x = followRun;\n",
  },
] as const;

describe('the layer map is enforced by lint and typecheck', () => {
  for (const c of cases) {
    it(`${c.layer}: a planted wrong import fails lint and typecheck; a clean file passes both`, async () => {
      const lintErrors = await lint(c.file, c.wrong);
      expect(lintErrors.join('\n')).toContain('no-restricted-imports');
      expect(lintErrors.join('\n')).toContain(c.lintSays);
      expect(typecheck(c.tsconfig, c.file, c.wrong).join('\n')).toMatch(c.tscSays);

      expect(await lint(c.file, c.clean)).toEqual([]);
      expect(typecheck(c.tsconfig, c.file, c.clean)).toEqual([]);
    });
  }

  it('Node → Node edges (trainer → electron/core, core → electron) are refused by lint; tsc cannot see them', async () => {
    const trainerWrong = "import { resolvePaths } from '../../electron/core/paths';\nexport const x = resolvePaths;\n";
    expect((await lint('trainer/train/planted-layer-check.ts', trainerWrong)).join('\n')).toContain('the trainer runs on hosts');
    expect(typecheck('trainer/tsconfig.json', 'trainer/train/planted-layer-check.ts', trainerWrong)).toEqual([]);
    const coreWrong = "import { app } from 'electron';\nexport const x = app;\n";
    expect((await lint('electron/core/planted-layer-check.ts', coreWrong)).join('\n')).toContain('core, cli and web are Node-only');
  });
});
