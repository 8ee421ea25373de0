import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  BuildOnce,
  buildSettingsBinds,
  buildUrls,
  BUILD_CA_MOUNT,
  LOCK_SUFFIX,
  writeCaBundle,
  type BuildFn,
} from './build-process';

/** A build that runs until the test ends it. */
function gatedBuild(): {
  build: BuildFn;
  calls: number;
  say(text: string): void;
  finish(): void;
  fail(e: Error): void;
} {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  let progress: (text: string) => void = () => undefined;
  const g = {
    calls: 0,
    build: async (dir: string, p: (text: string) => void) => {
      g.calls++;
      progress = p;
      await new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'built'), 'yes');
    },
    say: (text: string) => progress(text),
    finish: () => resolve(),
    fail: (e: Error) => reject(e),
  };
  return g;
}

const until = async (what: () => boolean) => {
  for (let i = 0; i < 1000 && !what(); i++) await new Promise((r) => setTimeout(r, 10));
  return what();
};

describe('BuildOnce: the state of each build', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tp-buildonce-'));
  let n = 0;
  const dir = () => path.join(root, `py-${++n}`);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('none → building (with what the builder says) → ready; concurrent askers share one build', async () => {
    const sut = new BuildOnce({ root, timeoutMs: 60_000 });
    const d = dir();
    const g = gatedBuild();
    expect(sut.state(d)).toEqual({ status: 'none' });
    const first = await sut.prepare(d, ['a==1'], g.build);
    expect(first.status).toBe('building');
    expect(first.since).toEqual(expect.any(Number));
    expect(await until(() => g.calls === 1)).toBe(true);
    g.say('  Collecting a==1  ');
    expect(sut.state(d)).toMatchObject({ status: 'building', progress: 'Collecting a==1' });
    g.say('x'.repeat(1000));
    expect(sut.state(d).progress).toHaveLength(300);
    const joined = sut.ensure(d, ['a==1'], g.build);
    expect((await sut.prepare(d, ['a==1'], g.build)).status).toBe('building');
    expect(sut.inProgress).toBe(1);
    g.finish();
    expect(await joined).toBe(d);
    expect(g.calls).toBe(1);
    expect(sut.state(d)).toMatchObject({ status: 'ready', since: expect.any(Number) });
    expect(readFileSync(path.join(d, 'built'), 'utf8')).toBe('yes');
    expect(sut.builds).toBe(1);
    expect(sut.inProgress).toBe(0);
    // Ready: nothing is built again.
    expect((await sut.prepare(d, ['a==1'], g.build)).status).toBe('ready');
    expect(g.calls).toBe(1);
  });

  it('waits for a build at most as long as asked, or until the signal aborts; the build goes on', async () => {
    const sut = new BuildOnce({ root, timeoutMs: 60_000 });
    const d = dir();
    const g = gatedBuild();
    expect((await sut.prepare(d, ['b==1'], g.build, { waitMs: 50 })).status).toBe('building');
    const aborted = new AbortController();
    const waiting = sut.prepare(d, ['b==1'], g.build, { waitMs: 3_600_000, signal: aborted.signal });
    aborted.abort();
    expect((await waiting).status).toBe('building');
    const patient = sut.prepare(d, ['b==1'], g.build, { waitMs: 3_600_000 });
    g.finish();
    expect((await patient).status).toBe('ready');
    expect(g.calls).toBe(1);
  });

  it('keeps a failure as the state; retries it only on a prepare past retryFailedAfterMs, or at once when not given', async () => {
    const sut = new BuildOnce({ root, timeoutMs: 60_000 });
    const d = dir();
    const g = gatedBuild();
    const waited = sut.prepare(d, ['c==1'], g.build, { waitMs: 3_600_000 });
    await until(() => g.calls === 1);
    g.fail(new Error('could not install c==1: no such package'));
    const failed = await waited;
    expect(failed).toMatchObject({ status: 'failed', since: expect.any(Number) });
    expect(failed.error?.message).toBe('could not install c==1: no such package');
    expect(existsSync(d)).toBe(false); // a failed build leaves nothing behind
    expect(existsSync(`${d}${LOCK_SUFFIX}`)).toBe(false);
    expect(sut.failures).toBe(1);
    // A call soon after: the failure is the answer, nothing is built.
    expect((await sut.prepare(d, ['c==1'], g.build, { retryFailedAfterMs: 3_600_000 })).status).toBe('failed');
    expect(g.calls).toBe(1);
    // An explicit prepare (no retryFailedAfterMs) builds again.
    const again = await sut.prepare(d, ['c==1'], g.build);
    expect(again.status).toBe('building');
    expect(await until(() => g.calls === 2)).toBe(true);
    g.finish();
    await sut.ensure(d, ['c==1'], g.build);
    expect(sut.state(d).status).toBe('ready');
    expect(sut.state(d).error).toBeUndefined();
  });

  it("reports another runner's build (its lock) as building", () => {
    const sut = new BuildOnce({ root, timeoutMs: 60_000 });
    const d = dir();
    writeFileSync(`${d}${LOCK_SUFFIX}`, '');
    expect(sut.state(d)).toMatchObject({ status: 'building', since: expect.any(Number) });
    rmSync(`${d}${LOCK_SUFFIX}`);
    expect(sut.state(d)).toEqual({ status: 'none' });
  });
});

describe('build settings (package-index CA, proxy)', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'tp-buildca-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('sends builds that need an index through the proxy alone, and local builds nowhere', () => {
    expect(
      buildUrls(['https://pypi.org/simple', 'https://files.pythonhosted.org/'], { proxy: 'http://10.9.8.7:3128' }),
    ).toEqual(['http://10.9.8.7:3128']);
    expect(buildUrls(['https://pypi.org/simple'], {})).toEqual(['https://pypi.org/simple']);
    expect(buildUrls([], { proxy: 'http://10.9.8.7:3128' })).toEqual([]);
  });

  it('adds the extra CA to the system bundle, bound read-only into the build; refuses a file without a certificate', async () => {
    const extra = path.join(root, 'corp.pem');
    writeFileSync(extra, '-----BEGIN CERTIFICATE-----\nMIIBcorp\n-----END CERTIFICATE-----\n');
    const sut = await writeCaBundle(root, extra);
    const body = readFileSync(sut, 'utf8');
    expect(body.endsWith('-----BEGIN CERTIFICATE-----\nMIIBcorp\n-----END CERTIFICATE-----\n')).toBe(true);
    if (existsSync('/etc/ssl/certs/ca-certificates.crt'))
      expect(body.length).toBeGreaterThan(readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8').length);
    expect(buildSettingsBinds({ caBundle: sut })).toEqual(['--ro-bind', sut, BUILD_CA_MOUNT]);
    expect(buildSettingsBinds({})).toEqual([]);
    writeFileSync(extra, 'not a certificate');
    await expect(writeCaBundle(root, extra)).rejects.toThrow(/holds no PEM certificate/);
  });
});
