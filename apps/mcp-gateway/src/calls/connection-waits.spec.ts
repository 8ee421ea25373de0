import { ConnectionWaits } from './connection-waits';

describe('ConnectionWaits', () => {
  it('lets a call waiting for one account go on when that account is connected, and no other', async () => {
    const sut = new ConnectionWaits();
    const alice = sut.next('org-a', 'alice', 'srv-1');
    const bob = sut.next('org-a', 'bob', 'srv-1');
    const otherOrg = sut.next('org-b', 'alice', 'srv-1');
    const a = alice.wait(60_000);
    const b = bob.wait(60_000);
    const o = otherOrg.wait(60_000);
    sut.connected('org-a', 'alice', 'srv-1');
    expect(await a).toBe(true);
    bob.cancel();
    otherOrg.cancel();
    expect([await b, await o]).toEqual([false, false]);
  });

  it('a connection told before the wait began is not lost (next is taken first), and an abort ends the wait', async () => {
    const sut = new ConnectionWaits();
    const w = sut.next('org', null, 'srv');
    sut.connected('org', null, 'srv');
    expect(await w.wait(60_000)).toBe(true);
    const ctrl = new AbortController();
    const later = sut.next('org', null, 'srv').wait(60_000, ctrl.signal);
    ctrl.abort();
    expect(await later).toBe(false);
  });

  it("the org's own authorization (no user) lets every call waiting on that server go on", async () => {
    const sut = new ConnectionWaits();
    const a = sut.next('org', 'alice', 'srv').wait(60_000);
    const b = sut.next('org', null, 'srv').wait(60_000);
    const other = sut.next('org', 'alice', 'srv-2');
    const o = other.wait(60_000);
    sut.connected('org', null, 'srv');
    expect([await a, await b]).toEqual([true, true]);
    other.cancel();
    expect(await o).toBe(false);
  });
});
