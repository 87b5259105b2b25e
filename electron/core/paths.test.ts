import { describe, expect, it } from 'vitest';
import { expandHome, resolvePaths } from './paths';

describe('paths', () => {
  it('prefers COHORT_* over XDG over the home defaults', () => {
    expect(resolvePaths({}, '/home/u')).toMatchObject({
      configDir: '/home/u/.config/cohort',
      dataDir: '/home/u/.local/share/cohort',
      profilesDir: '/home/u/.config/cohort/profiles',
      knownHostsPath: '/home/u/.ssh/known_hosts',
    });
    expect(resolvePaths({ XDG_CONFIG_HOME: '/x/c', XDG_DATA_HOME: '/x/d' }, '/home/u')).toMatchObject({ configDir: '/x/c/cohort', dataDir: '/x/d/cohort' });
    expect(resolvePaths({ XDG_CONFIG_HOME: 'relative' }, '/home/u').configDir).toBe('/home/u/.config/cohort');
    expect(resolvePaths({ COHORT_CONFIG_DIR: '/t/cfg', COHORT_DATA_DIR: '/t/data', COHORT_KNOWN_HOSTS: '/t/kh', XDG_CONFIG_HOME: '/x' }, '/home/u')).toMatchObject({
      configDir: '/t/cfg',
      dataDir: '/t/data',
      knownHostsPath: '/t/kh',
    });
  });
  it('expands ~', () => {
    expect(expandHome('~/.ssh/id', '/h')).toBe('/h/.ssh/id');
    expect(expandHome('/abs', '/h')).toBe('/abs');
  });
});
