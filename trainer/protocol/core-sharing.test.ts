import { describe, expect, it } from 'vitest';
import { coreSharing } from './core-sharing';

describe('coreSharing', () => {
  it('hosts with one boot id are one machine: its ranks share its cores', () => {
    const s = coreSharing([
      { host: 'h1', bootId: 'a', cores: 2, ranks: 1 },
      { host: 'h2', bootId: 'a', cores: 2, ranks: 1 },
      { host: 'h3', bootId: 'a', cores: 2, ranks: 1 },
    ]);
    expect(s).toEqual({ hosts: ['h1', 'h2', 'h3'], ranks: 3, description: '3 ranks on h1+h2+h3 (2 cores)' });
  });

  it('several ranks on one host share it; the machine with the most ranks is named', () => {
    expect(coreSharing([{ host: 'n1', bootId: 'a', cores: 8, ranks: 1 }, { host: 'n2', bootId: 'b', cores: 16, ranks: 4 }])).toEqual({ hosts: ['n2'], ranks: 4, description: '4 ranks on n2 (16 cores)' });
  });

  it('one rank per machine (distinct boot ids, or none known): no sharing', () => {
    expect(coreSharing([{ host: 'h1', bootId: 'a', cores: 2, ranks: 1 }, { host: 'h2', bootId: 'b', cores: 2, ranks: 1 }])).toBeUndefined();
    expect(coreSharing([{ host: 'h1', cores: 2, ranks: 1 }, { host: 'h2', cores: 2, ranks: 1 }])).toBeUndefined();
    expect(coreSharing([])).toBeUndefined();
  });
});
