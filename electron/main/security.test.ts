import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CSP, CSP_META } from '../common/csp';
import { CSP as MAIN_CSP } from './security';

describe('Content-Security-Policy', () => {
  it('renderer/index.html carries the one policy in its meta tag (less frame-ancestors, which meta cannot set)', () => {
    const html = readFileSync(new URL('../../renderer/index.html', import.meta.url), 'utf8');
    const meta = /<meta http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(html)?.[1];
    expect(meta).toBe(CSP_META);
  });

  it('Electron main sends the same header as cohort serve', () => {
    expect(MAIN_CSP).toBe(CSP);
    expect(CSP).toContain("frame-ancestors 'none'");
    expect(CSP_META).not.toContain('frame-ancestors');
  });
});
