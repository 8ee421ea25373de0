import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { RemotePool } from './remote-pool';
import type { RemoteEnvironmentRequest } from './remote-provider';
import { FakeRemoteProvider, type FakeBox } from './testing/fake-remote-provider';

// The cases of runner-e2b's pool (apps/runner-e2b/src/sandboxes/sandbox-pool.spec.ts before the core), unchanged in what they assert.

const request = (org: string, fingerprint: string | null = 'f1'): RemoteEnvironmentRequest => ({
  org,
  fingerprint,
  lanes: 1,
  pip: [],
});
const keys = (key: string, family: string, requirementsHash: string | null = null) => ({
  key,
  family,
  requirementsHash,
});
const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
};

describe('RemotePool (runner-e2b cases)', () => {
  let builds: FakeRemoteProvider;
  let sut: RemotePool<RemoteEnvironmentRequest, FakeBox>;
  beforeEach(() => {
    builds = new FakeRemoteProvider();
    sut = new RemotePool(builds, { maxTotal: 10, maxPerOrg: 1, warm: 0, idleTtlMs: 60_000, buildRetryMs: 1000 });
  });
  afterEach(() => sut.close());

  it('answers ENVIRONMENT_BUILDING while the build goes on, then serves every call from the one sandbox', async () => {
    const env = sut.environment(request('a'), keys('k1', 'fam'));
    const first = await sut.ensureReady(env, 1).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ToolplaneError);
    expect((first as ToolplaneError).code).toBe(ErrorCode.ENVIRONMENT_BUILDING);
    expect((first as ToolplaneError).details).toMatchObject({ provider: 'e2b', status: 'building' });
    expect(sut.status(env)).toBe('building');
    await until(() => builds.pending.length === 1);
    builds.pending[0]!.finish();
    await sut.ensureReady(env, 5000);
    expect(sut.status(env)).toBe('ready');
    for (let i = 0; i < 3; i++) sut.release(await sut.lease(env), true);
    expect(sut.counters).toMatchObject({ creates: 1, reuses: 2 });
    expect(builds.pending).toHaveLength(1);
  });

  it('never leases one sandbox to two calls at once (calls_per_sandbox 1) and kills a dirty one', async () => {
    builds.auto = true;
    const env = sut.environment(request('a'), keys('k1', 'fam'));
    await sut.ensureReady(env, 5000);
    const one = await sut.lease(env);
    const abort = new AbortController();
    const second = sut.lease(env, 60_000, abort.signal);
    await new Promise((r) => setTimeout(r, 20));
    // The org is at its bound (1): nothing new is made while the only sandbox is busy.
    expect(sut.alive()).toBe(1);
    sut.release(one, false, 'dirty');
    await until(() => builds.killed.length === 1);
    const next = await second;
    expect(next.id).not.toBe(one.id);
    expect(sut.counters.kills.get('dirty')).toBe(1);
  });

  it("retires an org's sandboxes when a newer config fingerprint of the same requirements arrives, and evicts idle ones past the org bound", async () => {
    builds.auto = true;
    const old = sut.environment(request('a', 'f1'), keys('k-old', 'fam'));
    await sut.ensureReady(old, 5000);
    const oldId = [...old.sandboxes][0]!.id;
    const fresh = sut.environment(request('a', 'f2'), keys('k-new', 'fam'));
    await until(() => builds.killed.includes(oldId));
    await sut.ensureReady(fresh, 5000);
    expect(sut.counters.kills.get('retired')).toBe(1);
    // Another family of the same org: the idle sandbox goes (bound 1), the new one comes.
    const other = sut.environment(request('a', 'f2'), keys('k-other', 'fam2', 'req'));
    await sut.ensureReady(other, 5000);
    expect(sut.counters.kills.get('evicted')).toBe(1);
    expect(sut.alive('a')).toBe(1);
  });
});
