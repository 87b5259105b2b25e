// Every error code the sources make has its sentence (electron/common/error-wording.ts): the codes are
// read from the sources themselves, the ways errors are made here, so a new code without a row in
// the table fails this test (issue 22, GUI error wording). One row serves both clients: the
// dashboard's rendering names no CLI flag, the terminal's no dashboard view (one truth in GUI and CLI).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli';
import { ERRNO_WORDING, ERROR_FAMILIES, ERROR_WORDING, NOTICE_CODES, cliWording, guiWording, hintFor, hintLines } from '../../electron/common';


/**
 * Where a code is given to an error in the sources: an error class's code argument (a class's fixed
 * code: its `super(`), a `code` field (ErrorInfo, error events, check problems, ApiCallError), cohort
 * check's problems (core/check/analyze.ts `p(severity, code`) and classifySshError's `mk(code`. The
 * expression up to the next comma is read; its codes are the string literals it can evaluate to
 * (the whole expression, or a ternary's branches: `code: full ? 'a' : 'b'`).
 */
const CODE_SITES = /(?:\bcode: |\bnew (?:CohortError|SshError|HostCmdFailure|CollectiveError|RunSelectError|ProfileStoreError)\(\s*|\bsuper\(|\bp\('(?:error|warning|info)', |\bmk\()([^,\n]*)/g;
const RESULT_LITERALS = /(?:^|\? |: )'([a-z0-9]+(?:-[a-z0-9]+)*)'/g;

/** Every code made in trainer/, electron/ and renderer/src (not tests), with a file that makes it. */
function codesInSources(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const f of readdirSync(dir)) {
      const p = join(dir, f);
      if (statSync(p).isDirectory()) {
        if (f !== 'node_modules') walk(p);
        continue;
      }
      if (!/\.(ts|svelte)$/.test(f) || /\.(test|d)\.ts$/.test(f)) continue;
      const text = readFileSync(p, 'utf8');
      const at = (code: string) => out.has(code) || out.set(code, relative(ROOT, p));
      for (const m of text.matchAll(CODE_SITES)) for (const c of m[1]!.matchAll(RESULT_LITERALS)) at(c[1]!);
      // The *ErrorCode unions (SshErrorCode, CollectiveErrorCode, ProfileStoreErrorCode...).
      for (const m of text.matchAll(/type \w*ErrorCode\s*=([^;]+);/g)) for (const c of m[1]!.matchAll(/'([a-z0-9-]+)'/g)) at(c[1]!);
    }
  };
  for (const d of ['trainer', 'electron', join('renderer', 'src')]) walk(join(ROOT, d));
  return out;
}

describe('the dashboard words every error code (error-wording.ts)', () => {
  const codes = codesInSources();

  it('finds the codes errors are made with (the scan itself works)', () => {
    for (const c of ['port-refused', 'port-blocked', 'link-failed', 'slurm-check-failed', 'ssh-auth', 'ssh-timeout', 'ssh-disconnected', 'bundle-mismatch', 'deploy-failed', 'host-lost', 'slurm-partition-unknown', 'check-host-failed', 'disk-low', 'rank-hung', 'bad-config', 'profile-invalid']) expect(codes.has(c), c).toBe(true);
    expect(codes.size).toBeGreaterThan(100);
  });

  it('has a sentence for every code in the sources (a new code needs a row)', () => {
    const missing = [...codes].filter(([c]) => !NOTICE_CODES.includes(c) && guiWording(c) === undefined).map(([c, file]) => `${c} (${file})`);
    expect(missing, 'codes without a GUI sentence in electron/common/error-wording.ts').toEqual([]);
  });

  it('has no row for a code nothing makes any more', () => {
    const stale = Object.keys(ERROR_WORDING).filter((c) => !codes.has(c));
    expect(stale, 'rows whose code no source makes').toEqual([]);
  });

  it('words run-time families: a Slurm job\'s end state, a difference between hosts', () => {
    expect(guiWording('slurm-node-fail', 'n3')).toContain('n3');
    expect(guiWording('mismatch-driver')).toMatch(/hosts differ/);
    expect(ERROR_FAMILIES.map((f) => f.prefix)).toEqual(['slurm-', 'mismatch-']);
  });

  it('is a sentence for a dashboard user: what to do with its views, no CLI flag, the host named', () => {
    for (const code of [...Object.keys(ERROR_WORDING), ...Object.keys(ERRNO_WORDING)]) {
      const text = guiWording(code, 'h7')!;
      expect(text, code).not.toMatch(/(^|\s)--[a-z]/);
      expect(text.length, code).toBeGreaterThan(30);
      expect(text, code).not.toMatch(/\{host\}|\{where\}|\[\[|\]\]|\|/);
    }
    expect(guiWording('ssh-auth', 'h7')).toMatch(/^Cohort could not log in to h7 \(.*\): in Profiles, give this host a key file/);
    expect(guiWording('ssh-refused')).toMatch(/^The host refused the connection/);
    expect(guiWording('ssh-timeout', 'gpu2')).toMatch(/^gpu2 did not answer/);
    expect(hintFor({ code: 'ssh-timeout', host: 'gpu2', hint: 'the host is down, firewalled, or the address is wrong' }, 'gui')).toMatch(/^gpu2 did not answer in time/);
    expect(hintFor({ code: 'ssh-timeout', host: 'gpu2', hint: 'core' }, 'cli')).toMatch(/^gpu2 did not answer in time: .*cohort probe PROFILE$/);
    expect(hintFor({ code: 'a-code-from-the-future', hint: 'core' }, 'cli')).toBe('core');
    expect(hintFor({ code: 'saved', hint: 'Profile saved' }, 'gui')).toBe('Profile saved');
  });

  it('is the same sentence in the terminal, in its words: commands and flags, no dashboard view', () => {
    const views = /\b(Profiles|Test connection|History|Launch|Live run|Hosts|Trust and remember)\b/;
    for (const code of [...Object.keys(ERROR_WORDING), ...Object.keys(ERRNO_WORDING), 'slurm-timeout', 'mismatch-driver']) {
      const cli = cliWording(code, 'h7')!;
      expect(cli, code).toBeDefined();
      expect(cli, code).not.toMatch(views);
      expect(cli, code).not.toMatch(/\{host\}|\{where\}|\[\[|\]\]|\|/);
      // the same sentence: both start alike, and a row without a surface-specific part is identical
      const raw = (ERROR_WORDING as Record<string, string>)[code] ?? (ERRNO_WORDING as Record<string, string>)[code];
      if (raw && !raw.includes('[[')) expect(cli, code).toBe(guiWording(code, 'h7'));
    }
    expect(cliWording('ssh-refused', 'gpu2')).toBe('gpu2 refused the connection: nothing listens on its SSH port. Check that sshd runs there and that the port in the profile (cohort profiles export/import) is right, then cohort probe PROFILE');
    expect(guiWording('ssh-refused', 'gpu2')).toBe('gpu2 refused the connection: nothing listens on its SSH port. Check that sshd runs there and that the port in Profiles is right, then Test connection');
    expect(cliWording('run-still-running', undefined, { runId: '20261126-0700-ab12' })).toBe('That run is still running: stop it first (cohort stop 20261126-0700-ab12), then delete it');
  });

  it("words Node's errno codes that reach a user (ECONNREFUSED, ENOSPC, EADDRINUSE...) for both clients", () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EACCES', 'ENOSPC', 'EADDRINUSE', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR']) {
      expect(guiWording(code, undefined, { path: '/p/q' }), code).toBeDefined();
      expect(cliWording(code, undefined, { address: '10.0.0.5', port: 22 }), code).toBeDefined();
    }
    expect(cliWording('ECONNREFUSED', 'h2', { address: '10.0.0.5', port: 22 })).toMatch(/^10\.0\.0\.5:22 refused the connection/);
    expect(cliWording('EACCES', undefined, { path: '/etc/cohort' })).toMatch(/^Permission denied on \/etc\/cohort: /);
  });

  it("the terminal's hint lines: the code's sentence, then core's own hint when it says more", () => {
    const e = { code: 'slurm-partition-unknown', host: 'login', message: 'profile hpc: no partition gpu', hint: 'set scheduler.partition to one of: debug, one' };
    expect(hintLines(e)).toEqual([cliWording('slurm-partition-unknown', 'login'), 'set scheduler.partition to one of: debug, one']);
    expect(hintLines({ ...e, message: `${e.message}: ${e.hint}` })).toEqual([cliWording('slurm-partition-unknown', 'login')]);
    expect(hintLines({ code: 'not-a-code-anything-makes', message: 'm', hint: 'core says' })).toEqual(['core says']);
    expect(hintLines({ code: 'not-a-code-anything-makes', message: 'm: core says', hint: 'core says' })).toEqual([]);
    expect(hintLines({ code: 'ENOSPC', message: "ENOSPC: no space left on device, open '/d/x'", path: '/d/x' })).toEqual([cliWording('ENOSPC', undefined, { path: '/d/x' })]);
  });
});
