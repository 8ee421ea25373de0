import { Semaphore } from './semaphore';

describe('Semaphore', () => {
  it('admits at most `limit` holders and hands slots over in order', async () => {
    const sut = new Semaphore(2);
    const r1 = await sut.acquire();
    const r2 = await sut.acquire();
    const order: number[] = [];
    const w3 = sut.acquire().then((r) => (order.push(3), r));
    const w4 = sut.acquire().then((r) => (order.push(4), r));
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]);
    r1();
    r1(); // a second release of the same slot is ignored
    const r3 = await w3;
    expect(order).toEqual([3]);
    expect(sut.inUse).toBe(2);
    r2();
    (await w4)();
    r3();
    expect(sut.inUse).toBe(0);
  });
});
