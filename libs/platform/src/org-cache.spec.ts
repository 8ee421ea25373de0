import { OrgScopedCache } from './org-cache';

describe('OrgScopedCache', () => {
  it('keeps values per org until their TTL, and a cached undefined is a hit', () => {
    const c = new OrgScopedCache<string | undefined>(10);
    c.set('a', 'k', 'A', 60_000, c.versionOf('a'));
    c.set('b', 'k', undefined, 60_000, c.versionOf('b'));
    c.set('a', 'gone', 'G', 0, c.versionOf('a')); // a TTL of 0 stores nothing
    expect(c.get('a', 'k')).toMatchObject({ value: 'A' });
    expect(c.get('b', 'k')).toMatchObject({ value: undefined });
    expect(c.get('a', 'gone')).toBeUndefined();
    expect(c.get('c', 'k')).toBeUndefined();
  });

  it('expires entries', () => {
    jest.useFakeTimers({ now: 1_000_000 });
    try {
      const c = new OrgScopedCache<string>(10);
      c.set('a', 'k', 'A', 500, c.versionOf('a'));
      jest.setSystemTime(1_000_499);
      expect(c.get('a', 'k')?.value).toBe('A');
      jest.setSystemTime(1_000_500);
      expect(c.get('a', 'k')).toBeUndefined();
    } finally {
      jest.useRealTimers();
    }
  });

  it('does not store a value loaded across a forget of its org or a clear, but other orgs are unaffected', () => {
    const c = new OrgScopedCache<string>(10);
    const beforeA = c.versionOf('a');
    const beforeB = c.versionOf('b');
    c.forget('a');
    c.set('a', 'k', 'stale', 60_000, beforeA);
    c.set('b', 'k', 'B', 60_000, beforeB);
    expect(c.get('a', 'k')).toBeUndefined();
    expect(c.get('b', 'k')?.value).toBe('B');
    const beforeClear = c.versionOf('b');
    c.clear();
    expect(c.get('b', 'k')).toBeUndefined();
    c.set('b', 'k', 'stale', 60_000, beforeClear);
    expect(c.get('b', 'k')).toBeUndefined();
  });

  it('drops everything when the entry bound is reached', () => {
    const c = new OrgScopedCache<number>(3);
    for (let i = 0; i < 3; i++) c.set(`o${i}`, 'k', i, 60_000, c.versionOf(`o${i}`));
    expect(c.get('o2', 'k')?.value).toBe(2);
    c.set('o3', 'k', 3, 60_000, c.versionOf('o3'));
    expect([0, 1, 2].map((i) => c.get(`o${i}`, 'k'))).toEqual([undefined, undefined, undefined]);
    expect(c.get('o3', 'k')?.value).toBe(3);
  });

  it('forgets one part of an org (e.g. an agent) without its other parts, and refuses a load that raced it', () => {
    const c = new OrgScopedCache<string>(10);
    c.set('a', 'x1', 'X', 60_000, c.versionOf('a', 'x'), 'x');
    c.set('a', 'y1', 'Y', 60_000, c.versionOf('a', 'y'), 'y');
    const loadingX = c.versionOf('a', 'x');
    c.forget('a', 'x');
    expect(c.get('a', 'x1')).toBeUndefined();
    expect(c.get('a', 'y1')?.value).toBe('Y');
    c.set('a', 'x1', 'stale', 60_000, loadingX, 'x');
    expect(c.get('a', 'x1')).toBeUndefined();
    c.set('a', 'x1', 'fresh', 60_000, c.versionOf('a', 'x'), 'x');
    expect(c.get('a', 'x1')?.value).toBe('fresh');
    // Forgetting the whole org covers its parts, and a part's load taken before it.
    const loadingY = c.versionOf('a', 'y');
    c.forget('a');
    expect([c.get('a', 'x1'), c.get('a', 'y1')]).toEqual([undefined, undefined]);
    c.set('a', 'y1', 'stale', 60_000, loadingY, 'y');
    expect(c.get('a', 'y1')).toBeUndefined();
  });

  it('refuses a part load that raced a forget of a part it had never stored', () => {
    const c = new OrgScopedCache<string>(10);
    const loading = c.versionOf('a', 'new');
    c.forget('a', 'new');
    c.set('a', 'k', 'stale', 60_000, loading, 'new');
    expect(c.get('a', 'k')).toBeUndefined();
  });
});
