import {
  ErrorCode,
  ToolplaneError,
  ToolsetsToolsList,
  ToolsGet,
  type Tool,
  type ToolExecutionResult,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { aTool, deferred, FakeMessaging, newTestService, type TestService } from '@toolplane/testing';
import { loadExecutorConfig } from '../executor.config';
import { ExecutionRecords, type RecordDraft } from '../records/records.service';
import { ApprovalPolicy } from './approval-policy';
import { ArgumentsService } from './arguments.service';
import { CallLifecycle, type CheckedCall } from './call-lifecycle.service';
import { ExecutionsService } from './executions.service';
import { ToolCatalogService } from './tool-catalog.service';

const ORG = 'org-batch';

const toolOf = (n: number, name: string, opts: { parallel?: boolean; approval?: boolean } = {}): Tool =>
  aTool({
    id: `tool-00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    name,
    default_requires_approval: opts.approval ?? null,
    enable_parallel_execution: opts.parallel ?? null,
  });

/**
 * The runs, under the test's control: each run waits for its tool's gate, and the log says when
 * each started and finished — concurrency is proven by order of events, not by timing.
 */
class Runs {
  readonly log: string[] = [];
  readonly gates = new Map<string, ReturnType<typeof deferred<void>>>();
  readonly started = new Map<string, ReturnType<typeof deferred<void>>>();
  /** Every call a record was drafted for (run, held, or refused before it ran). */
  readonly drafted: CheckedCall[] = [];

  gate(name: string) {
    let g = this.gates.get(name);
    if (!g) this.gates.set(name, (g = deferred<void>()));
    return g;
  }

  startedOf(name: string) {
    let s = this.started.get(name);
    if (!s) this.started.set(name, (s = deferred<void>()));
    return s;
  }

  lifecycle(): Partial<CallLifecycle> {
    let n = 0;
    return {
      draft: (tool, call) =>
        (this.drafted.push(call),
        {
          executionId: `exec-${String(++n).padStart(8, '0')}-0000-4000-8000-000000000000`,
          orgId: call.org_id,
          tool,
          batchId: call.batch_id ?? null,
        }) as unknown as RecordDraft,
      answersFirst: (kind, call: CheckedCall) => kind === 'run' && call.mode === 'sync',
      runThenRecord: async (tool: Tool, call: CheckedCall, draft: RecordDraft): Promise<ToolExecutionResult> => {
        this.log.push(`start ${tool.name}`);
        this.startedOf(tool.name!).resolve();
        await this.gate(tool.name!).promise;
        this.log.push(`end ${tool.name}`);
        if (tool.name === 'broken') throw new Error('boom');
        return {
          execution_id: draft.executionId,
          status: 'success',
          func_return: call.args.x,
          stdout: [],
          stderr: [],
          sandbox_config_fingerprint: null,
          provider: 'local',
          duration_ms: 1,
          trace_id: '',
        };
      },
      start: async (_tool, _call, kind, draft) =>
        ({
          execution_id: draft.executionId,
          status: kind === 'approval' ? 'pending_approval' : 'awaiting_client',
        }) as never,
    };
  }
}

describe('ExecutionsService.executeBatch and execute (alone: runs, records and the registry are fakes)', () => {
  let runs: Runs;
  let bus: FakeMessaging;
  let recorded: string[];
  let t: TestService<ExecutionsService>;
  const tools = [
    toolOf(1, 'par_a', { parallel: true }),
    toolOf(2, 'par_b', { parallel: true }),
    toolOf(3, 'seq_a'),
    toolOf(4, 'seq_b'),
    toolOf(5, 'held', { approval: true }),
    toolOf(6, 'broken'),
  ];

  beforeEach(async () => {
    runs = new Runs();
    recorded = [];
    bus = new FakeMessaging()
      .handle(ToolsGet, (r) => {
        const tool = tools.find((x) => x.name === r.name || x.id === r.id);
        if (!tool) throw new ToolplaneError(ErrorCode.TOOL_NOT_FOUND, `No tool ${r.name ?? r.id}`);
        return { tool };
      })
      // The set "ops": seq_a (held through it) and held (runs through it, though its default holds it).
      .handle(ToolsetsToolsList, (r) => {
        if (r.name !== 'ops') throw new ToolplaneError(ErrorCode.TOOLSET_NOT_FOUND, `No toolset ${r.name}`);
        return {
          tools: [
            { tool: tools[2]!, requires_approval: true },
            { tool: tools[4]!, requires_approval: false },
          ],
          next_cursor: null,
        };
      });
    const records: Partial<ExecutionRecords> = { recordAfter: async (draft) => void recorded.push(draft.executionId) };
    t = await newTestService(ExecutionsService, {
      config: loadExecutorConfig({ EXECUTE_BATCH_MAX_CALLS: '8' }),
      providers: [ToolCatalogService, ArgumentsService, ApprovalPolicy],
      edges: [
        { provide: MessagingClient, useValue: bus.asClient() },
        { provide: CallLifecycle, useValue: runs.lifecycle() },
        { provide: ExecutionRecords, useValue: records },
      ],
    });
  });
  afterEach(() => t.close());

  const call = (name: string, x: unknown = 1) => ({ call_id: `c-${name}`, tool_name: name, args: { x } });
  const batch = (calls: ReturnType<typeof call>[]) => t.service.executeBatch({ org_id: ORG, calls } as never);

  it('runs the parallel-safe calls together, then the others one by one in order; results in input order', async () => {
    const done = batch([call('seq_a', 1), call('par_a', 2), call('seq_b', 3), call('par_b', 4)]);
    // Both parallel calls start before either may finish: they overlap.
    await Promise.all([runs.startedOf('par_a').promise, runs.startedOf('par_b').promise]);
    expect(runs.log).toEqual(expect.arrayContaining(['start par_a', 'start par_b']));
    expect(runs.log.some((l) => l.startsWith('end') || l.includes('seq'))).toBe(false);
    runs.gate('par_b').resolve();
    runs.gate('par_a').resolve();
    await runs.startedOf('seq_a').promise;
    // The sequential ones: seq_b waits for seq_a to finish.
    expect(runs.log).not.toContain('start seq_b');
    runs.gate('seq_a').resolve();
    await runs.startedOf('seq_b').promise;
    expect(runs.log.indexOf('end seq_a')).toBeLessThan(runs.log.indexOf('start seq_b'));
    runs.gate('seq_b').resolve();
    const { results } = await done;
    expect(results.map((r) => [r.call_id, 'func_return' in r ? r.func_return : undefined])).toEqual([
      ['c-seq_a', 1],
      ['c-par_a', 2],
      ['c-seq_b', 3],
      ['c-par_b', 4],
    ]);
  });

  it('answers bad arguments, unknown tools and approvals without running them; a failing run is its own result', async () => {
    for (const n of ['seq_a', 'broken']) runs.gate(n).resolve();
    const { results } = await batch([
      call('seq_a', 'not an int'),
      call('nope'),
      call('held'),
      call('broken'),
      call('seq_a', 7),
    ]);
    expect(results[0]).toMatchObject({ call_id: 'c-seq_a', status: 'error', error: { code: 'INVALID_ARGUMENTS' } });
    expect(results[1]).toMatchObject({ call_id: 'c-nope', status: 'error', error: { code: 'TOOL_NOT_FOUND' } });
    expect(results[2]).toMatchObject({ call_id: 'c-held', status: 'pending_approval' });
    expect(results[3]).toMatchObject({ call_id: 'c-broken', status: 'error', error: { code: 'INTERNAL' } });
    expect(results[4]).toMatchObject({ call_id: 'c-seq_a', status: 'success', func_return: 7 });
    // Only the two valid, runnable calls ran; the refused ones were recorded as failed.
    expect(runs.log.filter((l) => l.startsWith('start'))).toEqual(['start broken', 'start seq_a']);
    expect(recorded).toHaveLength(2);
  });

  it('refuses a batch over EXECUTE_BATCH_MAX_CALLS before anything runs', async () => {
    await expect(batch(Array.from({ length: 9 }, () => call('seq_a')))).rejects.toMatchObject({
      code: 'BATCH_TOO_LARGE',
    });
    expect(runs.log).toEqual([]);
  });

  it("drafts the record of every call for the batch's end user: run, held and refused alike", async () => {
    runs.gate('seq_a').resolve();
    const { results } = await t.service.executeBatch({
      org_id: ORG,
      user_id: 'end-user-1',
      calls: [call('seq_a'), call('held'), call('nope')],
    } as never);
    expect(results.map((r) => r.status)).toEqual(['success', 'pending_approval', 'error']);
    expect(runs.drafted.map((c) => [c.call_id, c.user_id]).sort()).toEqual([
      ['c-held', 'end-user-1'],
      ['c-nope', 'end-user-1'],
      ['c-seq_a', 'end-user-1'],
    ]);
    runs.drafted.length = 0;
    await batch([call('seq_a')]);
    expect(runs.drafted.map((c) => c.user_id)).toEqual([undefined]);
  });

  it("runs a call through a tool set by the set's setting, and records the set; a tool outside it is TOOL_NOT_FOUND before anything else", async () => {
    const execute = (body: Record<string, unknown>) =>
      t.service.execute({ org_id: ORG, args: {}, mode: 'sync', toolset: 'ops', ...body } as never);
    expect(await execute({ tool_name: 'seq_a', args: { x: 1 } })).toMatchObject({ status: 'pending_approval' });
    runs.gate('held').resolve();
    expect(await execute({ tool_name: 'held', args: { x: 2 } })).toMatchObject({ status: 'success', func_return: 2 });
    expect(runs.drafted.map((c) => [c.toolset, c.args.x])).toEqual([
      ['ops', 1],
      ['ops', 2],
    ]);
    // seq_b is a tool of the org, with arguments it would refuse: neither is revealed, nothing is drafted.
    const lookups = bus.requestsTo(ToolsGet).length;
    await expect(execute({ tool_name: 'seq_b', args: { x: 'not an int' } })).rejects.toMatchObject({
      code: 'TOOL_NOT_FOUND',
      message: 'The tool set ops has no tool seq_b',
    });
    await expect(execute({ tool_name: 'nope' })).rejects.toMatchObject({
      code: 'TOOL_NOT_FOUND',
      message: 'The tool set ops has no tool nope',
    });
    await expect(execute({ tool_name: 'seq_a', toolset: 'elsewhere' })).rejects.toMatchObject({
      code: 'TOOLSET_NOT_FOUND',
    });
    expect(bus.requestsTo(ToolsGet)).toHaveLength(lookups);
    expect(runs.drafted).toHaveLength(2);
    expect(runs.log).toEqual(['start held', 'end held']);
  });
});
