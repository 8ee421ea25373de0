import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { RemotePool, type RemoteEnvironment } from './remote-pool';
import type { RemoteEnvironmentRequest } from './remote-provider';
import { FakeRemoteProvider, type FakeBox } from './testing/fake-remote-provider';

// The cases of runner-modal's pool (apps/runner-modal/src/sandboxes/sandbox-pool.spec.ts before the core), unchanged in what they assert.

const request = (org: string, lanes = 1): RemoteEnvironmentRequest => ({ org, fingerprint: 'f1', pip: [], lanes });
const until = async (cond: () => boolean) => {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  return cond();
};
const never = new AbortController().signal;

describe('RemotePool (runner-modal cases)', () => {
  let creates: FakeRemoteProvider;
  let sut: RemotePool<RemoteEnvironmentRequest, FakeBox>;
  const pool = (o: Partial<ConstructorParameters<typeof RemotePool>[1]> = {}) =>
    new RemotePool(creates, { maxPerOrg: 2, maxTotal: 3, warm: 0, idleTtlMs: 60_000, buildRetryMs: 1000, ...o });
  const env = (org: string, lanes = 1): RemoteEnvironment<RemoteEnvironmentRequest, FakeBox> =>
    sut.environment(request(org, lanes), { key: `k-${org}-${lanes}`, family: `fam-${org}`, requirementsHash: null });
  beforeEach(() => {
    creates = new FakeRemoteProvider();
  });
  afterEach(() => sut.close());

  it('leases one sandbox to calls_per_sandbox calls at once, and proves it clean once drained before it takes more', async () => {
    creates.auto = true;
    sut = pool();
    const e = env('a', 2);
    const [x, y] = await Promise.all([sut.lease(e, 5000, never), sut.lease(e, 5000, never)]);
    expect(x).toBe(y);
    sut.release(x, true);
    // Draining: the next call does not start in it before the other call ended and the proof passed.
    expect(x.free).toBe(false);
    sut.release(y, true);
    expect(await until(() => x.free)).toBe(true);
    expect((await sut.lease(e, 5000, never)).id).toBe(x.id);
  });

  it('keeps within the per-org and the global bound; a place freed goes to the org that waits, and a call past its wait is PROVIDER_RATE_LIMITED', async () => {
    sut = pool();
    const a = env('a');
    const b = env('b');
    const c = env('c');
    const calls = [
      sut.lease(a, 30_000, never),
      sut.lease(a, 30_000, never),
      sut.lease(a, 30_000, never),
      sut.lease(b, 30_000, never),
    ];
    // Org a gets its share (2), org b the last place; org a's third call creates nothing more.
    expect(await until(() => creates.pending.length === 3)).toBe(true);
    expect(creates.pending.filter((p) => p.org === 'a')).toHaveLength(2);
    for (const p of creates.pending.splice(0)) p.finish();
    const [a1, a2, a3, b1] = calls;
    const held = [await a1, await a2, await b1];
    expect(sut.alive()).toBe(3);
    const refused = await sut.lease(c, 50, never).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ToolplaneError);
    expect((refused as ToolplaneError).code).toBe(ErrorCode.PROVIDER_RATE_LIMITED);
    // Org c waits for a place; b's sandbox goes idle: it is terminated to make room, and c's sandbox created.
    const later = sut.lease(c, 30_000, never);
    sut.release(held[2]!, true);
    expect(await until(() => creates.pending.some((p) => p.org === 'c'))).toBe(true);
    expect(creates.killed).toContain(held[2]!.id);
    creates.pending.find((p) => p.org === 'c')!.finish();
    expect((await later).env).toBe(c);
    // Org a's third call gets one of its own sandboxes once freed.
    sut.release(held[0]!, true);
    expect((await a3).id).toBe(held[0]!.id);
    expect(sut.alive()).toBeLessThanOrEqual(3);
  });

  it('creates ahead of demand while calls wait (up to the per-org bound), and reaps idle sandboxes', async () => {
    sut = pool({ maxPerOrg: 6, maxTotal: 10, idleTtlMs: 1000, reapEveryMs: 20 });
    const e = env('a');
    const calls = [sut.lease(e, 30_000, never), sut.lease(e, 30_000, never)];
    // Two waiting calls: twice that is being created.
    expect(await until(() => creates.pending.length === 4)).toBe(true);
    for (const p of creates.pending.splice(0)) p.finish();
    const slots = await Promise.all(calls);
    expect(sut.counters.surged).toBeGreaterThanOrEqual(1);
    for (const s of slots) sut.release(s, true);
    expect(sut.alive()).toBe(4);
    expect(await until(() => sut.alive() === 0)).toBe(true);
    expect(sut.counters.reaps).toBe(4);
    expect(creates.killed).toHaveLength(4);
  });

  it("a new config fingerprint in the family retires the old environment's sandboxes", async () => {
    creates.auto = true;
    sut = pool();
    const old = env('a');
    const s = await sut.lease(old, 5000, never);
    const next = sut.environment(
      { ...request('a'), fingerprint: 'f2' },
      { key: 'k-a-f2', family: 'fam-a', requirementsHash: null },
    );
    // Idle ones at once; the busy one once its call ended.
    expect(creates.killed).not.toContain(s.id);
    sut.release(s, true);
    expect(creates.killed).toContain(s.id);
    expect((await sut.lease(next, 5000, never)).id).not.toBe(s.id);
  });
});
