import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { EXIT_BUSY, RemoteSandboxLayout, type RunReport } from '@toolplane/sandbox';
import { RemoteDriver, type RemoteCall } from './remote-driver';
import { RemotePool } from './remote-pool';
import type { RemoteEnvironmentRequest, RunningCommand } from './remote-provider';
import { fakeRequest, FakeRemoteProvider, type FakeBox } from './testing/fake-remote-provider';

type Ending = { exit: number } | { lost: unknown };

/** The fake provider with a call side: each call's command ends as the test scripts it, and its report is what the test says. */
class CallingProvider extends FakeRemoteProvider {
  override readonly launcher = {
    settings: { python: '/usr/bin/python3', node: '/usr/bin/node', toolUid: 1500, watch: ['/tmp'] },
    layout: new RemoteSandboxLayout('/state'),
  };
  readonly endings: Ending[] = [];
  report: Partial<RunReport> = {};
  readonly started: string[] = [];
  private nonce = '';
  override python = (): string => '/usr/bin/python3';
  override moduleDir = (): string => '/state';
  override write = async (
    _env: unknown,
    _box: FakeBox,
    files: Array<{ path: string; data: string }>,
  ): Promise<void> => {
    this.nonce = JSON.parse(files.find((f) => f.path.endsWith('job.json'))!.data).nonce;
  };
  override start = async (_env: unknown, box: FakeBox): Promise<RunningCommand> => {
    this.started.push(box.sandboxId);
    const ending = this.endings.shift() ?? { exit: 0 };
    return { wait: async () => ending, stop: () => undefined };
  };
  override read = async (): Promise<string> => {
    const frame = `${JSON.stringify({ v: 1, nonce: this.nonce, status: 'success', value: 42 })}\n`;
    return JSON.stringify({
      v: 1,
      nonce: this.nonce,
      lane: 0,
      exit: 0,
      signal: null,
      timed_out: false,
      output_limit: false,
      frame,
      frame_too_large: false,
      stdout_bytes: 0,
      stderr_bytes: 0,
      dirty: [],
      proved_at: 3,
      ...this.report,
    });
  };
  override isGone = (): boolean => false;
  override providerError = (e: unknown) => new ToolplaneError(ErrorCode.PROVIDER_UNAVAILABLE, String(e));
  override scrub = (t: string): string => t;
  override noNode = (): string => 'no node here';
}

const call = (o: Partial<RemoteCall> = {}): RemoteCall => ({
  runId: 'r1',
  toolId: 't1',
  functionName: 'f',
  sourceCode: 'def f():\n    return 42\n',
  sourceType: 'python',
  args: {},
  env: {},
  maskValues: [],
  timeoutMs: 1000,
  ...o,
});

/** The call protocol on a leased sandbox: the report decides whether the sandbox is kept. */
describe('RemoteDriver', () => {
  let provider: CallingProvider;
  let pool: RemotePool<RemoteEnvironmentRequest, FakeBox>;
  let sut: RemoteDriver<RemoteEnvironmentRequest, FakeBox>;
  const never = new AbortController().signal;
  const env = () => pool.environment(fakeRequest('a'), provider.keys(fakeRequest('a')));
  beforeEach(() => {
    provider = new CallingProvider();
    provider.auto = true;
    pool = new RemotePool(provider, { maxPerOrg: 2, maxTotal: 2, warm: 0, idleTtlMs: 60_000, buildRetryMs: 1000 });
    sut = new RemoteDriver(provider, pool, {
      stdoutLimitBytes: 1024,
      stderrLimitBytes: 1024,
      maxOutputBytes: 4096,
      commandGraceMs: 100,
    });
  });
  afterEach(() => pool.close());

  it("returns the frame's value and keeps a sandbox the launcher proved clean, with its new proof", async () => {
    const e = env();
    const first = await sut.run(e, call(), 5000, never);
    expect(first).toMatchObject({ status: 'success', value: 42, reused: false });
    const second = await sut.run(e, call(), 5000, never);
    expect(second).toMatchObject({ status: 'success', reused: true, sandboxId: first.sandboxId });
    expect([...e.sandboxes][0]!.proof.provedAt).toBe(3);
    expect(provider.kills).toEqual([]);
  });

  it('kills a sandbox a call left dirty; the next call gets another', async () => {
    const e = env();
    provider.report = { dirty: ['/tmp/evil.txt'] };
    const first = await sut.run(e, call(), 5000, never);
    expect(first.status).toBe('success');
    expect(provider.kills).toEqual([{ id: first.sandboxId, reason: 'dirty' }]);
    provider.report = {};
    expect((await sut.run(e, call(), 5000, never)).sandboxId).not.toBe(first.sandboxId);
  });

  it('leaves a sandbox another replica holds (launcher busy) and retries the call elsewhere; a lost stream is SANDBOX_LOST and kills it', async () => {
    const e = env();
    provider.endings.push({ exit: EXIT_BUSY });
    const r = await sut.run(e, call(), 5000, never);
    expect(r.status).toBe('success');
    expect(provider.started).toHaveLength(2);
    expect(provider.started[0]).not.toBe(provider.started[1]);
    expect(provider.kills).toEqual([]); // forgotten, not killed: it is the other replica's
    provider.endings.push({ lost: new Error('stream reset') });
    const lost = await sut.run(e, call(), 5000, never);
    expect(lost.error).toMatchObject({ code: ErrorCode.SANDBOX_LOST });
    expect(provider.kills.at(-1)).toEqual({ id: lost.sandboxId, reason: 'lost' });
  });

  it('refuses a TypeScript tool on a sandbox without Node (UNSUPPORTED_TOOL) and gives the sandbox back', async () => {
    provider.node = false;
    const e = env();
    await pool.ensureReady(e, 5000);
    const refused = await sut
      .run(e, call({ sourceType: 'typescript', sourceCode: 'export function f(): number { return 1; }' }), 5000, never)
      .catch((x: unknown) => x);
    expect((refused as ToolplaneError).code).toBe(ErrorCode.UNSUPPORTED_TOOL);
    expect([...e.sandboxes][0]!.active).toBe(0);
    expect(provider.kills).toEqual([]);
  });
});
