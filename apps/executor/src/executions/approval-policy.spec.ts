import {
  AgentToolsAttached,
  AgentToolsList,
  ErrorCode,
  ToolCreated,
  ToolplaneError,
  ToolsetsToolsList,
  ToolsetUpserted,
  type Tool,
  type Toolset,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { aTool, deferred, FakeMessaging, newTestService, type TestService } from '@toolplane/testing';
import { loadExecutorConfig } from '../executor.config';
import { ApprovalPolicy } from './approval-policy';

const ORG = 'org-policy';
const toolOf = (n: number, name: string, over: Partial<Tool> = {}): Tool =>
  aTool({ ...over, id: `tool-00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, name });

const plain = toolOf(1, 'plain', { default_requires_approval: false });
const risky = toolOf(2, 'risky', { default_requires_approval: true });
const local = toolOf(3, 'local', { tool_type: 'client' });
const outside = toolOf(4, 'outside');

const now = () => new Date().toISOString();
const toolsetEvent = (name: string) => {
  const toolset: Toolset = {
    id: 'toolset-00000000-0000-4000-8000-000000000001',
    org_id: ORG,
    name,
    description: null,
    instructions: null,
    tool_ids: [],
    tool_names: [],
    tags: ['x'],
    requires_approval: null,
    created_at: now(),
    updated_at: now(),
  };
  return { event_id: `e-${Math.random()}`, occurred_at: now(), org_id: ORG, toolset_id: toolset.id, name, toolset };
};

describe('ApprovalPolicy (alone: the registry and the bus are fakes)', () => {
  let bus: FakeMessaging;
  let t: TestService<ApprovalPolicy>;
  /** Each set's members as the registry answers now: tool and its effective requires_approval. */
  let sets: Map<string, Array<[Tool, boolean]>>;
  /** Members per page the fake registry answers (small, so that reading every page is proven). */
  const PAGE = 2;

  beforeEach(async () => {
    sets = new Map([
      [
        'support',
        [
          [plain, true],
          [risky, false],
          [local, false],
        ],
      ],
    ]);
    bus = new FakeMessaging()
      .handle(ToolsetsToolsList, (r) => {
        const members = sets.get(r.name);
        if (!members) throw new ToolplaneError(ErrorCode.TOOLSET_NOT_FOUND, `No toolset ${r.name}`, { name: r.name });
        const from = Number(r.cursor ?? 0);
        const page = members.slice(from, from + PAGE);
        return {
          tools: page.map(([tool, requires_approval]) => ({ tool, requires_approval })),
          next_cursor: from + PAGE < members.length ? String(from + PAGE) : null,
        };
      })
      .handle(AgentToolsList, () => ({
        tools: [{ tool: plain, requires_approval: true, requires_approval_override: true, attached_at: now() }],
        next_cursor: null,
      }));
    t = await newTestService(ApprovalPolicy, {
      config: loadExecutorConfig({}),
      edges: [{ provide: MessagingClient, useValue: bus.asClient() }],
    });
  });
  afterEach(() => t.close());

  const sut = () => t.service;

  describe('through a tool set', () => {
    it("follows the set's effective setting for each member, over the tool's default either way", async () => {
      expect(await sut().kindOf(ORG, plain, { toolset: 'support' })).toBe('approval');
      expect(await sut().kindOf(ORG, risky, { toolset: 'support' })).toBe('run');
      expect(await sut().kindOf(ORG, local, { toolset: 'support' })).toBe('client');
      // The same tools without the set: their defaults.
      expect(await sut().kindOf(ORG, plain)).toBe('run');
      expect(await sut().kindOf(ORG, risky)).toBe('approval');
    });

    it('finds a member by name or id, reading every page of the set once', async () => {
      expect(await sut().memberOf(ORG, 'support', { tool_name: 'local' })).toBe(local.id);
      expect(await sut().memberOf(ORG, 'support', { tool_id: risky.id })).toBe(risky.id);
      expect(await sut().kindOf(ORG, local, { toolset: 'support' })).toBe('client');
      expect(bus.requestsTo(ToolsetsToolsList)).toEqual([
        { org_id: ORG, name: 'support', limit: 200 },
        { org_id: ORG, name: 'support', limit: 200, cursor: '2' },
      ]);
    });

    it('answers a tool outside the set as TOOL_NOT_FOUND naming the set, the same whether the org has it or not', async () => {
      const byName = await sut()
        .memberOf(ORG, 'support', { tool_name: 'outside' })
        .catch((e: ToolplaneError) => e);
      const missing = await sut()
        .memberOf(ORG, 'support', { tool_name: 'nowhere' })
        .catch((e: ToolplaneError) => e);
      expect(byName).toMatchObject({
        code: ErrorCode.TOOL_NOT_FOUND,
        message: 'The tool set support has no tool outside',
        details: { toolset: 'support', tool: 'outside' },
      });
      expect(missing).toMatchObject({
        code: ErrorCode.TOOL_NOT_FOUND,
        message: 'The tool set support has no tool nowhere',
      });
      await expect(sut().memberOf(ORG, 'support', { tool_id: outside.id })).rejects.toMatchObject({
        code: ErrorCode.TOOL_NOT_FOUND,
        details: { toolset: 'support', tool: outside.id },
      });
      // Never run unheld: a tool that is not a member (e.g. it left between lookup and decision) is refused here too.
      await expect(sut().kindOf(ORG, outside, { toolset: 'support' })).rejects.toMatchObject({
        code: ErrorCode.TOOL_NOT_FOUND,
      });
    });

    it("passes on the registry's TOOLSET_NOT_FOUND for an unknown set, and keeps nothing of it", async () => {
      await expect(sut().memberOf(ORG, 'nope', { tool_name: 'plain' })).rejects.toMatchObject({
        code: ErrorCode.TOOLSET_NOT_FOUND,
      });
      sets.set('nope', [[plain, false]]);
      expect(await sut().memberOf(ORG, 'nope', { tool_name: 'plain' })).toBe(plain.id);
    });

    it("drops a set's members on its toolset event only, and every set of the org on a tool event (a tool tagged later joins)", async () => {
      sets.set('other', [[risky, true]]);
      await sut().memberOf(ORG, 'support', { tool_name: 'plain' });
      expect(await sut().kindOf(ORG, risky, { toolset: 'other' })).toBe('approval');
      const asked = () => bus.requestsTo(ToolsetsToolsList).length;
      const before = asked();

      sets.set('support', [[plain, false]]);
      sets.set('other', [[risky, false]]);
      bus.emit(ToolsetUpserted, toolsetEvent('support'));
      expect(await sut().kindOf(ORG, plain, { toolset: 'support' })).toBe('run');
      // The other set is still the cached one.
      expect(await sut().kindOf(ORG, risky, { toolset: 'other' })).toBe('approval');
      expect(asked()).toBe(before + 1);

      sets.set('support', [
        [plain, false],
        [outside, true],
      ]);
      bus.emit(ToolCreated, {
        event_id: 'e-tool',
        occurred_at: now(),
        org_id: ORG,
        tool_id: outside.id,
        tool_name: outside.name,
        tool: outside,
      });
      expect(await sut().memberOf(ORG, 'support', { tool_name: 'outside' })).toBe(outside.id);
      expect(await sut().kindOf(ORG, outside, { toolset: 'support' })).toBe('approval');
      expect(await sut().kindOf(ORG, risky, { toolset: 'other' })).toBe('run');
    });

    it('does not keep members read while their set changed (the next call reads again)', async () => {
      const gate = deferred<void>();
      bus.handle(ToolsetsToolsList, async () => {
        await gate.promise;
        return { tools: [{ tool: plain, requires_approval: true }], next_cursor: null };
      });
      const racing = sut().kindOf(ORG, plain, { toolset: 'support' });
      bus.emit(ToolsetUpserted, toolsetEvent('support'));
      gate.resolve();
      expect(await racing).toBe('approval');
      bus.handle(ToolsetsToolsList, () => ({ tools: [{ tool: plain, requires_approval: false }], next_cursor: null }));
      expect(await sut().kindOf(ORG, plain, { toolset: 'support' })).toBe('run');
    });
  });

  describe('for an agent', () => {
    it("follows the agent's setting for its tools and the tool's default for others; an agent event drops only that agent", async () => {
      expect(await sut().kindOf(ORG, plain, { agentId: 'a1' })).toBe('approval');
      expect(await sut().kindOf(ORG, risky, { agentId: 'a1' })).toBe('approval');
      expect(await sut().kindOf(ORG, outside, { agentId: 'a1' })).toBe('run');
      expect(bus.requestsTo(AgentToolsList)).toHaveLength(1);
      await sut().kindOf(ORG, plain, { toolset: 'support' });
      bus.emit(AgentToolsAttached, { event_id: 'e-a', occurred_at: now(), org_id: ORG, agent_id: 'a1', tools: [] });
      await sut().kindOf(ORG, plain, { agentId: 'a1' });
      await sut().kindOf(ORG, plain, { toolset: 'support' });
      expect(bus.requestsTo(AgentToolsList)).toHaveLength(2);
      expect(bus.requestsTo(ToolsetsToolsList)).toHaveLength(2);
    });

    it('keeps an agent named like a set apart from the set', async () => {
      expect(await sut().kindOf(ORG, risky, { toolset: 'support' })).toBe('run');
      expect(await sut().kindOf(ORG, risky, { agentId: 'support' })).toBe('approval');
    });
  });
});
