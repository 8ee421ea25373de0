import { FairQueue } from './fair-queue';

const tick = () => new Promise((r) => setImmediate(r));

describe('FairQueue', () => {
  it('admits at most `limit` at once, first come first served within an org, and ignores a second release', async () => {
    const sut = new FairQueue(2);
    const r1 = await sut.acquire('a');
    const r2 = await sut.acquire('a');
    const order: number[] = [];
    const w3 = sut.acquire('a').then((r) => (order.push(3), r));
    const w4 = sut.acquire('a').then((r) => (order.push(4), r));
    await tick();
    expect(order).toEqual([]);
    expect(sut.queued).toBe(2);
    r1();
    r1();
    const r3 = await w3;
    expect(order).toEqual([3]);
    expect(sut.inUse).toBe(2);
    r2();
    (await w4)();
    r3();
    expect(sut.inUse).toBe(0);
  });

  it('gives a freed place to the waiting org served longest ago: another org goes before the rest of a flood', async () => {
    const sut = new FairQueue(1);
    const first = await sut.acquire('flood');
    const order: string[] = [];
    const calls = [...Array.from({ length: 5 }, (_, i) => ['flood', `f${i}`]), ['other', 'o0']].map(([org, id]) =>
      sut.acquire(org!).then((release) => {
        order.push(id!);
        release();
      }),
    );
    await tick();
    first();
    await Promise.all(calls);
    expect(order).toEqual(['o0', 'f0', 'f1', 'f2', 'f3', 'f4']); // the flood was served last: the other org goes first
  });

  it('keeps an org within its own limit while another org has room', async () => {
    const sut = new FairQueue(4, 2);
    const a1 = await sut.acquire('a');
    await sut.acquire('a');
    let third = false;
    const a3 = sut.acquire('a').then((r) => ((third = true), r));
    const b = await sut.acquire('b'); // not behind a's third call
    await tick();
    expect(third).toBe(false);
    expect(sut.inUse).toBe(3);
    a1();
    (await a3)();
    b();
  });

  it('alternates between two orgs that both keep calls waiting', async () => {
    const sut = new FairQueue(1);
    const first = await sut.acquire('a');
    const order: string[] = [];
    const calls = ['a1', 'a2', 'a3', 'b1', 'b2', 'b3'].map((id) =>
      sut.acquire(id[0]!).then((release) => {
        order.push(id);
        release();
      }),
    );
    await tick();
    first();
    await Promise.all(calls);
    expect(order).toEqual(['b1', 'a1', 'b2', 'a2', 'b3', 'a3']);
  });

  it('drops a waiter whose signal aborts: it never takes a place, and the others go on', async () => {
    const sut = new FairQueue(1);
    const held = await sut.acquire('a');
    const gaveUp = new AbortController();
    const waiting = sut.acquire('b', gaveUp.signal);
    const after = sut.acquire('c');
    gaveUp.abort(new Error('no longer wanted'));
    await expect(waiting).rejects.toThrow('no longer wanted');
    expect(sut.queued).toBe(1);
    held();
    const r = await after;
    expect(sut.inUse).toBe(1);
    r();
    expect(sut.inUse).toBe(0);
    await expect(sut.acquire('d', AbortSignal.abort(new Error('already')))).resolves.toBeInstanceOf(Function);
  });
});
