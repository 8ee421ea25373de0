import { randomUUID } from 'node:crypto';
import { testDatabaseUrl } from '../support/context';
import { RawClient } from '../support/nats-client';
import { metricOf, startStack, type Stack } from '../support/stack';

const RUN = 'toolplane.internal.v1.runners.local.run';

/**
 * What a call finds on /tmp. Its mtime tells the tmpfs apart: a reused one has its times put back
 * to those of its mount, a new one has the time of its own mount (mount ids and device numbers
 * are reused by the kernel, so they cannot).
 */
const PROBE = `import os
def probe():
    st = os.lstat("/tmp")
    return {"entries": sorted(os.listdir("/tmp")), "mode": oct(st.st_mode), "nlink": st.st_nlink,
            "xattrs": os.listxattr("/tmp"), "mtime_ns": st.st_mtime_ns}
`;

/**
 * The work dir of a warm slot, on a runner with one slot for the default environment, so that
 * consecutive calls run in the same sandbox: a tmpfs the previous call left as it was mounted is
 * reused (its times put back); any trace of the call on /tmp — an entry, a mode, an extended
 * attribute — and the next call gets a new tmpfs. Either way the next call sees a pristine /tmp.
 */
describe('runner-local work dir between calls of one slot', () => {
  const prefix = `wd${Math.random().toString(36).slice(2, 8)}`;
  let stack: Stack;
  let client: RawClient;
  const run = async (source: string, fn: string) => {
    const r = await client.req(
      RUN,
      {
        org_id: 'wd',
        tool_id: `tool-${randomUUID()}`,
        function_name: fn,
        source_code: source,
        source_type: 'python',
        args: {},
        env: {},
        timeout_ms: 10_000,
      },
      { timeoutMs: 20_000 },
    );
    if (r.status !== 'success') throw new Error(JSON.stringify(r));
    return r.func_return;
  };
  const probe = () => run(PROBE, 'probe');
  const pristine = { entries: [], mode: '0o40700', nlink: 2, xattrs: [] };

  beforeAll(async () => {
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['runner-local'],
      env: { LOG_LEVEL: 'warn', RUNNER_POOL_WARM: '1', RUNNER_POOL_MAX_PER_ENV: '1' },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
  });

  /** The runner's sandbox counters: the calls below must all run in the one slot it started. */
  const slots = async () => {
    const app = stack.apps.get('runner-local')!;
    const [started, killed, dirty] = await Promise.all(
      [
        'toolplane_runner_pool_slots_started_total',
        'toolplane_runner_pool_slots_killed_total',
        'toolplane_runner_pool_slots_dirty_total',
      ].map((m) => metricOf(app, m)),
    );
    return { started, killed, dirty };
  };

  it('reuses the tmpfs of a call that left no trace, with its times put back', async () => {
    const first = await probe();
    expect(first).toMatchObject(pristine);
    const before = await slots();
    // The same tmpfs (its mount time) in the same slot (no sandbox started, ended or found dirty);
    // a failure shows which, with the runner's log.
    const sameAsFirst = async () => {
      const seen = { probe: await probe(), slots: await slots() };
      try {
        expect(seen).toEqual({ probe: first, slots: before });
      } catch (e) {
        (e as Error).message += `\nrunner-local log:\n${stack.apps.get('runner-local')!.output().slice(-3000)}`;
        throw e;
      }
    };
    await sameAsFirst();
    // An entry made and removed again leaves nothing: still the same tmpfs, as it was.
    expect(
      await run(
        'import os\ndef churn():\n    os.mkdir("/tmp/d")\n    open("/tmp/d/f", "w").write("x")\n    os.remove("/tmp/d/f")\n    os.rmdir("/tmp/d")\n',
        'churn',
      ),
    ).toBeNull();
    await sameAsFirst();
    // Times set by the tool are put back (they would otherwise carry 2 x 64 bits to the next call).
    expect(
      await run(
        'import os\ndef touch():\n    os.utime("/tmp", ns=(123456789, 987654321))\n    return os.lstat("/tmp").st_mtime_ns\n',
        'touch',
      ),
    ).toBe(987654321);
    await sameAsFirst();
  });

  it.each([
    ['a file', 'open("/tmp/left-behind", "w").write("secret of the previous call")'],
    ['an empty directory', 'os.mkdir("/tmp/dir")'],
    ['a FIFO', 'os.mkfifo("/tmp/fifo")'],
    ['a new mode on /tmp', 'os.chmod("/tmp", 0o755)'],
    ['no permissions on /tmp', 'os.chmod("/tmp", 0)'],
    ['an extended attribute on /tmp', 'os.setxattr("/tmp", "user.leak", b"previous call")'],
  ])('gives the next call a new tmpfs after a call that leaves %s', async (_what, statement) => {
    const before = await probe();
    expect(before).toMatchObject(pristine);
    expect(
      await run(
        `import os\ndef dirty():\n    ${statement}\n    return sorted(os.listdir("/tmp")) if os.access("/tmp", os.R_OK) else "unreadable"\n`,
        'dirty',
      ),
    ).toBeDefined();
    const after = await probe();
    expect(after).toMatchObject(pristine);
    expect(after.mtime_ns).not.toBe(before.mtime_ns);
  });
});
