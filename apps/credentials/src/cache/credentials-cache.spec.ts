import { CredentialsCache } from './credentials-cache';

const cacheWith = (ttl = 60_000, max = 100) =>
  new CredentialsCache({ CREDENTIALS_ENV_CACHE_TTL_MS: ttl, CREDENTIALS_ENV_CACHE_MAX_ENTRIES: max });

describe('CredentialsCache', () => {
  it('loads once per org and key, and never serves one org from another', async () => {
    const cache = cacheWith();
    let loads = 0;
    const load = (v: string) => async () => (loads++, v);
    expect(await cache.get('a', 'k', load('A'))).toBe('A');
    expect(await cache.get('a', 'k', load('X'))).toBe('A');
    expect(await cache.get('b', 'k', load('B'))).toBe('B');
    expect(loads).toBe(2);
  });

  it('forgets an org on invalidate, and does not store a load that overlapped a write', async () => {
    const cache = cacheWith();
    await cache.get('a', 'k', async () => 'old');
    cache.invalidate('a');
    let release!: () => void;
    const slow = cache.get('a', 'k', () => new Promise<string>((r) => (release = () => r('stale'))));
    cache.invalidate('a'); // a write lands while the load is in flight
    release();
    expect(await slow).toBe('stale');
    expect(await cache.get('a', 'k', async () => 'new')).toBe('new');
    expect(await cache.get('a', 'k', async () => 'other')).toBe('new');
  });

  it('does not cache with a TTL of 0, and never caches a failed load', async () => {
    const off = cacheWith(0);
    let n = 0;
    await off.get('a', 'k', async () => n++);
    await off.get('a', 'k', async () => n++);
    expect(n).toBe(2);
    const cache = cacheWith();
    await expect(
      cache.get('a', 'k', async () => Promise.reject(new Error('ENCRYPTION_KEY_MISSING'))),
    ).rejects.toThrow();
    expect(await cache.get('a', 'k', async () => 'ok')).toBe('ok');
  });
});
