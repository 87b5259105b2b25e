import { expect, it } from 'vitest';
import { formatRoute, parseRoute } from './route';

it('parses views and runs, and refuses what is neither', () => {
  expect(parseRoute('#/history')).toEqual({ view: 'history' });
  expect(parseRoute('#/live/')).toEqual({ view: 'live' });
  expect(parseRoute('#/runs/20261126-101500-ab12')).toEqual({ view: 'live', runId: '20261126-101500-ab12' });
  for (const h of ['', '#', '#/nope', '#/runs/', '#/runs/../x', '#/runs/a.b', '#/runs/%E0%A4%A', '#/runs/a/b']) expect(parseRoute(h), h).toBeUndefined();
});

it('formats what it parses', () => {
  expect(formatRoute('live', 'r-1')).toBe('#/runs/r-1');
  expect(formatRoute('live')).toBe('#/live');
  expect(formatRoute('hosts', 'r-1')).toBe('#/hosts');
  expect(parseRoute(formatRoute('live', 'r-1'))).toEqual({ view: 'live', runId: 'r-1' });
});
