import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import type { Sandbox } from 'e2b';
import { SandboxPool, Slot, type Environment, type EnvironmentRequest, type SandboxFactory } from './sandbox-pool';

/** A factory whose builds finish when the test says. */
class Builds implements SandboxFactory {
  readonly pending: Array<() => void> = [];
  readonly killed: string[] = [];
  private n = 0;
  auto = false;

  build(env: Environment): Promise<Slot> {
    const slot = new Slot({ sandboxId: `sbx-${++this.n}` } as Sandbox, env, { provedAt: 1, state: {} }, true);
    if (this.auto) return Promise.resolve(slot);
    return new Promise((resolve) => this.pending.push(() => resolve(slot)));
  }
  async discover(): Promise<Slot[]> {
    return [];
  }
  async prove(): Promise<boolean> {
    return true;
  }
  async kill(slot: Slot): Promise<void> {
    this.killed.push(slot.id);
  }
  async keepAlive(): Promise<void> {}
  readonly sandboxTimeoutMs = 60_000;
}

const request = (org: string, fingerprint: string | null = 'f1'): EnvironmentRequest => ({ org, account: { apiKey: 'k' }, fingerprint, template: 'base', network: false, lanes: 1, pip: [], npm: [], buildScripts: false });
const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
};

describe('SandboxPool', () => {
  let builds: Builds;
  let sut: SandboxPool;
  beforeEach(() => {
    builds = new Builds();
    sut = new SandboxPool(builds, { maxTotal: 10, maxPerOrg: 1, idleTtlMs: 60_000, buildRetryMs: 1000 });
  });
  afterEach(() => sut.close());

  it('answers ENVIRONMENT_BUILDING while the build goes on, then serves every call from the one sandbox', async () => {
    const env = sut.environment('k1', 'fam', null, request('a'));
    const first = await sut.ensureReady(env, 1).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ToolplaneError);
    expect((first as ToolplaneError).code).toBe(ErrorCode.ENVIRONMENT_BUILDING);
    expect((first as ToolplaneError).details).toMatchObject({ provider: 'e2b', status: 'building' });
    expect(sut.status(env)).toBe('building');
    await until(() => builds.pending.length === 1);
    builds.pending[0]!();
    await sut.ensureReady(env, 5000);
    expect(sut.status(env)).toBe('ready');
    for (let i = 0; i < 3; i++) sut.release(await sut.lease(env), true);
    expect(sut.counters).toMatchObject({ creates: 1, reuses: 2 });
    expect(builds.pending).toHaveLength(1);
  });

  it('never leases one sandbox to two calls at once (calls_per_sandbox 1) and kills a dirty one', async () => {
    builds.auto = true;
    const env = sut.environment('k1', 'fam', null, request('a'));
    await sut.ensureReady(env, 5000);
    const one = await sut.lease(env);
    const abort = new AbortController();
    const second = sut.lease(env, abort.signal);
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
    const old = sut.environment('k-old', 'fam', null, request('a', 'f1'));
    await sut.ensureReady(old, 5000);
    const oldId = [...old.slots][0]!.id;
    const fresh = sut.environment('k-new', 'fam', null, request('a', 'f2'));
    await until(() => builds.killed.includes(oldId));
    await sut.ensureReady(fresh, 5000);
    expect(sut.counters.kills.get('retired')).toBe(1);
    // Another family of the same org: the idle sandbox goes (bound 1), the new one comes.
    const other = sut.environment('k-other', 'fam2', 'req', request('a', 'f2'));
    await sut.ensureReady(other, 5000);
    expect(sut.counters.kills.get('evicted')).toBe(1);
    expect(sut.alive('a')).toBe(1);
  });
});
