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

  describe('load (read-through)', () => {
    /** A load the test finishes when it wants: the race windows are explicit, not timed. */
    function deferred<T>() {
      let resolve!: (v: T) => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
      return { promise, resolve, reject };
    }

    it('shares one load between concurrent callers of a key, then answers from the cache', async () => {
      const c = new OrgScopedCache<string>(10);
      const d = deferred<string>();
      let loads = 0;
      const loader = () => (loads++, d.promise);
      const both = Promise.all([
        c.load('a', 'k', loader, { ttlMs: 60_000 }),
        c.load('a', 'k', loader, { ttlMs: 60_000 }),
      ]);
      d.resolve('A');
      expect(await both).toEqual([
        { value: 'A', cached: false },
        { value: 'A', cached: false },
      ]);
      expect(loads).toBe(1);
      expect(await c.load('a', 'k', loader, { ttlMs: 60_000 })).toEqual({ value: 'A', cached: true });
      // The same key in another org is another entry.
      expect(await c.load('b', 'k', async () => 'B', { ttlMs: 60_000 })).toEqual({ value: 'B', cached: false });
    });

    it.each([
      ['its key', (c: OrgScopedCache<string>) => c.forgetKey('a', 'k')],
      ['its org', (c: OrgScopedCache<string>) => c.forget('a')],
      ['the part its value turns out to belong to', (c: OrgScopedCache<string>) => c.forget('a', 'tool-1')],
      ['everything', (c: OrgScopedCache<string>) => c.clear()],
    ])('does not keep a load that raced a forget of %s, and the next caller loads again', async (_what, forget) => {
      const c = new OrgScopedCache<string>(10);
      const old = deferred<string>();
      const first = c.load('a', 'k', () => old.promise, { ttlMs: 60_000, partOf: () => 'tool-1' });
      forget(c); // the update lands while the old value is on its way
      old.resolve('old');
      expect((await first).value).toBe('old'); // its caller asked before the change
      expect(c.get('a', 'k')).toBeUndefined();
      expect(await c.load('a', 'k', async () => 'new', { ttlMs: 60_000, partOf: () => 'tool-1' })).toEqual({
        value: 'new',
        cached: false,
      });
      expect(c.get('a', 'k')?.value).toBe('new');
    });

    it("keeps a load that raced a forget of another key or another org's", async () => {
      const c = new OrgScopedCache<string>(10);
      const d = deferred<string>();
      const p = c.load('a', 'k', () => d.promise, { ttlMs: 60_000, part: 'tool-1' });
      c.forgetKey('a', 'other');
      c.forget('b');
      c.forget('a', 'tool-2');
      d.resolve('A');
      await p;
      expect(c.get('a', 'k')?.value).toBe('A');
    });

    it('drops every key of a part at once (a tool cached by id and by name)', async () => {
      const c = new OrgScopedCache<string>(10);
      await c.load('a', 'id:1', async () => 'T', { ttlMs: 60_000, partOf: () => '1' });
      await c.load('a', 'name:t', async () => 'T', { ttlMs: 60_000, partOf: () => '1' });
      await c.load('a', 'name:u', async () => 'U', { ttlMs: 60_000, partOf: () => '2' });
      c.forget('a', '1');
      expect([c.get('a', 'id:1'), c.get('a', 'name:t')]).toEqual([undefined, undefined]);
      expect(c.get('a', 'name:u')?.value).toBe('U');
    });

    it('keeps no failed load: every waiting caller gets its error, the next one loads again', async () => {
      const c = new OrgScopedCache<string>(10);
      const d = deferred<string>();
      const a = c.load('a', 'k', () => d.promise, { ttlMs: 60_000 });
      const b = c.load('a', 'k', () => d.promise, { ttlMs: 60_000 });
      d.reject(new Error('registry down'));
      await expect(a).rejects.toThrow('registry down');
      await expect(b).rejects.toThrow('registry down');
      expect(await c.load('a', 'k', async () => 'A', { ttlMs: 60_000 })).toEqual({ value: 'A', cached: false });
    });

    it('decides the TTL per value (e.g. a miss is not kept)', async () => {
      const c = new OrgScopedCache<string | null>(10);
      const ttlMs = (v: string | null) => (v === null ? 0 : 60_000);
      await c.load('a', 'missing', async () => null, { ttlMs });
      await c.load('a', 'found', async () => 'F', { ttlMs });
      expect(c.get('a', 'missing')).toBeUndefined();
      expect(c.get('a', 'found')?.value).toBe('F');
    });
  });
});
