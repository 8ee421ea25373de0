import { latencySummary, leakRows, mixedOp, NonceLedger, ppidOf, rssMiBOf, Tally } from './load-accounting';

describe('NonceLedger', () => {
  it('counts every call echoed once as neither lost nor duplicated', () => {
    const sut = new NonceLedger();
    for (const n of ['a', 'b', 'c']) sut.send(n);
    for (const n of ['a', 'b', 'c']) sut.echo(n, n);
    expect(sut.report()).toEqual({ sent: 3, echoed: 3, failed: 0, lost: 0, duplicated: 0, foreign: 0 });
  });

  it('counts a call with no reply, or a success without its nonce, as lost; a typed error as failed, not lost', () => {
    const sut = new NonceLedger();
    for (const n of ['a', 'b', 'c', 'd']) sut.send(n);
    sut.echo('a', 'a');
    sut.echo('b', null);
    sut.fail('c');
    expect(sut.report()).toMatchObject({ echoed: 1, failed: 1, lost: 2, duplicated: 0 });
  });

  it("counts a nonce in another call's reply as duplicated, and the call that lost it as lost", () => {
    const sut = new NonceLedger();
    sut.send('a');
    sut.send('b');
    sut.echo('a', 'a');
    sut.echo('b', 'a');
    expect(sut.report()).toMatchObject({ echoed: 1, lost: 1, duplicated: 2 });
  });

  it('counts a nonce never sent as foreign', () => {
    const sut = new NonceLedger();
    sut.send('a');
    sut.echo('a', 'zzz');
    expect(sut.report()).toMatchObject({ echoed: 0, lost: 1, foreign: 1 });
  });

  it('refuses to send one nonce twice (a driver bug would hide duplicates)', () => {
    const sut = new NonceLedger();
    sut.send('a');
    expect(() => sut.send('a')).toThrow(/sent twice/);
  });
});

describe('mixedOp', () => {
  it('gives 20 % reads, 5 % upserts, 5 % MCP calls and 70 % executions', () => {
    const sut = new Tally();
    for (let i = 0; i < 1000; i++) sut.add(mixedOp(i));
    expect(Object.fromEntries(sut.entries())).toEqual({ read: 200, upsert: 50, mcp: 50, execute: 700 });
  });
});

describe('latencySummary', () => {
  it('reports p50, p99, max and the rate over the wall time', () => {
    const samples = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(latencySummary(samples, 2000)).toEqual({ n: 100, p50: 51, p99: 100, max: 100, perSecond: 50 });
  });

  it('reports zeros for no samples', () => {
    expect(latencySummary([], 10)).toEqual({ n: 0, p50: 0, p99: 0, max: 0, perSecond: 0 });
  });
});

describe('memory readings', () => {
  it('reads VmRSS in MiB, NaN without it', () => {
    expect(rssMiBOf('Name:\tnode\nVmRSS:\t  102400 kB\nThreads:\t11\n')).toBe(100);
    expect(rssMiBOf('Name:\tnode\nState:\tZ (zombie)\n')).toBeNaN();
  });

  it('reads the parent pid even when the command has spaces and parentheses', () => {
    expect(ppidOf('4242 (python3 (x) y) S 4200 4242 4200 0 -1')).toBe(4200);
  });
});

describe('leakRows', () => {
  const sample = (service: string, ...rss: number[]) => ({ service, rss });

  it('passes growth up to the bound between the first round and the last', () => {
    const [a, b] = leakRows([sample('executor', 80, 120, 150, 170), sample('registry', 80, 90, 95, 150)], 32);
    expect(a).toMatchObject({ service: 'executor', growth: 20, pass: true });
    expect(b).toMatchObject({ service: 'registry', growth: 55, pass: false });
  });

  it('fails a process that is gone', () => {
    expect(leakRows([sample('runner-local', 80, 90, 95, Number.NaN)], 32)[0]!.pass).toBe(false);
  });
});
