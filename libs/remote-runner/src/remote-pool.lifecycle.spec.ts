import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { DependencyInstallError } from '@toolplane/sandbox';
import { RemotePool, type RemoteEnvironment, type RemotePoolOptions } from './remote-pool';
import type { RemoteEnvironmentRequest } from './remote-provider';
import { fakeRequest, FakeRemoteProvider, type FakeBox } from './testing/fake-remote-provider';

type Env = RemoteEnvironment<RemoteEnvironmentRequest, FakeBox>;

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  return cond();
};

/** The remote pool's lifecycle, through an in-process provider: drain-and-prove, eviction, reaping, adoption, failed builds. */
describe('RemotePool lifecycle', () => {
  let provider: FakeRemoteProvider;
  let sut: RemotePool<RemoteEnvironmentRequest, FakeBox>;
  const pool = (o: Partial<RemotePoolOptions> = {}) =>
    new RemotePool(provider, { maxPerOrg: 2, maxTotal: 3, warm: 0, idleTtlMs: 60_000, buildRetryMs: 60_000, ...o });
  const env = (org: string, o: Partial<RemoteEnvironmentRequest> = {}): Env => {
    const req = fakeRequest(org, o);
    return sut.environment(req, provider.keys(req));
  };
  beforeEach(() => {
    provider = new FakeRemoteProvider();
  });
  afterEach(() => sut.close());

  describe('drain and prove (calls_per_sandbox > 1)', () => {
    it('takes no new call while a shared sandbox drains, and kills it when it cannot prove itself clean', async () => {
      provider.auto = true;
      sut = pool();
      const e = env('a', { lanes: 2 });
      const [x, y] = await Promise.all([sut.lease(e), sut.lease(e)]);
      expect(x).toBe(y);
      sut.release(x, true);
      expect(x.free).toBe(false);
      expect(provider.proves).toBe(0); // a call still runs in it: no proof yet
      provider.dirty = true;
      sut.release(y, true);
      expect(await until(() => provider.kills.some((k) => k.id === x.id))).toBe(true);
      expect(provider.proves).toBe(1);
      expect(provider.kills.find((k) => k.id === x.id)!.reason).toBe('dirty');
      expect(sut.counters.kills.get('dirty')).toBe(1);
    });

    it('hands a drained sandbox that proved clean to the call that waited for it, without making another', async () => {
      provider.auto = true;
      sut = pool({ maxPerOrg: 1 });
      const e = env('a', { lanes: 2 });
      const [x, y] = await Promise.all([sut.lease(e), sut.lease(e)]);
      sut.release(x, true);
      const third = sut.lease(e, 5000);
      sut.release(y, true);
      expect((await third).id).toBe(x.id);
      expect(x.proof.provedAt).toBe(2);
      expect(sut.counters.creates).toBe(1);
    });
  });

  describe('eviction', () => {
    it("kills another org's least recently used idle sandbox when the global bound is reached", async () => {
      provider.auto = true;
      sut = pool({ maxPerOrg: 2, maxTotal: 2 });
      const a = env('a');
      const b = env('b');
      const older = await sut.lease(a);
      const newer = await sut.lease(b);
      sut.release(older, true);
      sut.release(newer, true);
      // Org c needs a place: the idle sandbox used longest ago goes.
      const c = env('c');
      newer.lastUsed = older.lastUsed + 1;
      const s = await sut.lease(c, 5000);
      expect(s.env).toBe(c);
      expect(provider.kills.at(-1)).toEqual({ id: older.id, reason: 'evicted' });
      expect(provider.killed).not.toContain(newer.id);
      expect(sut.alive()).toBeLessThanOrEqual(2);
    });

    it('never evicts a busy sandbox: past the wait, PROVIDER_RATE_LIMITED naming the bounds', async () => {
      provider.auto = true;
      sut = pool({ maxPerOrg: 1, maxTotal: 1 });
      await sut.lease(env('a'));
      const refused = await sut.ensureReady(env('b'), 30).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ToolplaneError);
      expect((refused as ToolplaneError).code).toBe(ErrorCode.PROVIDER_RATE_LIMITED);
      expect((refused as ToolplaneError).message).toContain('E2B_MAX_SANDBOXES 1');
      expect(provider.kills).toEqual([]);
    });
  });

  describe('reaping', () => {
    it('kills sandboxes idle past the TTL, keeps busy ones, and forgets an environment with nothing left', async () => {
      provider.auto = true;
      sut = pool({ idleTtlMs: 1000, reapEveryMs: 60_000 });
      const e = env('a');
      const [idle, busy] = await Promise.all([sut.lease(e), sut.lease(e)]);
      sut.release(idle, true);
      idle.lastUsed = Date.now() - 2000;
      busy.lastUsed = Date.now() - 2000;
      sut.reap();
      expect(provider.kills).toEqual([{ id: idle.id, reason: 'idle' }]);
      expect(sut.counters.reaps).toBe(1);
      sut.release(busy, true);
      busy.lastUsed = Date.now() - 2000;
      e.updatedAt = Date.now() - 2000;
      sut.reap();
      expect(sut.alive()).toBe(0);
      // Forgotten: the same request makes a new environment record.
      expect(env('a')).not.toBe(e);
    });
  });

  describe('adoption after a restart', () => {
    it("adopts an earlier runner's sandboxes of the environment once (no create), and serves from them", async () => {
      sut = pool();
      const req = fakeRequest('a');
      provider.earlier.set(provider.keys(req).key, [{ sandboxId: 'old-1' }]);
      const e = env('a');
      await sut.ensureReady(e, 5000);
      const s = await sut.lease(e);
      expect(s.id).toBe('old-1');
      expect(sut.counters).toMatchObject({ adopted: 1, creates: 0, hits: 1 });
      expect(provider.pending).toHaveLength(0);
    });

    it('kills what it finds again beyond the bounds instead of holding more than its places', async () => {
      sut = pool({ maxPerOrg: 1 });
      const req = fakeRequest('a');
      provider.earlier.set(provider.keys(req).key, [{ sandboxId: 'old-1' }, { sandboxId: 'old-2' }]);
      await sut.ensureReady(env('a'), 5000);
      expect(sut.alive('a')).toBe(1);
      expect(await until(() => provider.kills.length === 1)).toBe(true);
      expect(provider.kills[0]).toEqual({ id: 'old-2', reason: 'found again, but the sandbox bounds are full' });
    });
  });

  describe('failed builds', () => {
    it("throws a build's failure to the call that waited for it, and tries again for the next one", async () => {
      sut = pool();
      const e = env('a');
      const waiting = sut.ensureReady(e, 5000).catch((x: unknown) => x);
      expect(await until(() => provider.pending.length === 1)).toBe(true);
      provider.pending[0]!.fail(new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, 'down'));
      expect(((await waiting) as ToolplaneError).code).toBe(ErrorCode.PROVIDER_UNAVAILABLE);
      expect(sut.status(e)).toBe('failed');
      expect(e.error).toEqual({ code: ErrorCode.PROVIDER_UNAVAILABLE, message: 'down' });
      const next = sut.ensureReady(e, 5000);
      expect(await until(() => provider.pending.length === 2)).toBe(true);
      provider.pending[1]!.finish();
      await next;
      expect(sut.status(e)).toBe('ready');
    });

    it('answers a failed requirements install at once while it is recent (no new build); a prepare tries again', async () => {
      sut = pool();
      const e = env('a', { pip: ['missing==1'] });
      const first = sut.ensureReady(e, 5000).catch((x: unknown) => x);
      expect(await until(() => provider.pending.length === 1)).toBe(true);
      provider.pending[0]!.fail(new DependencyInstallError('missing', 'could not install missing==1'));
      expect(await first).toBeInstanceOf(DependencyInstallError);
      expect(e.error).toMatchObject({ code: ErrorCode.DEPENDENCY_INSTALL_FAILED, package: 'missing' });
      expect(await sut.ensureReady(e, 5000).catch((x: unknown) => x)).toBeInstanceOf(DependencyInstallError);
      expect(provider.pending).toHaveLength(1);
      sut.prepare(e);
      expect(await until(() => provider.pending.length === 2)).toBe(true);
    });
  });
});
