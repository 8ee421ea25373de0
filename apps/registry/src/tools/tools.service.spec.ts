import {
  AgentToolsDetached,
  ErrorCode,
  SchemasGenerate,
  ToolCreated,
  ToolDeleted,
  ToolplaneError,
  ToolUpdated,
  type AgentToolDetachment,
  type RequestIn,
  type ToolsUpsert,
} from '@toolplane/contracts';
import { MessagingClient, type RequestOptions } from '@toolplane/messaging';
import { FakeMessaging, newTestService, type TestService } from '@toolplane/testing';
import type { EntityManager } from 'typeorm';
import { AgentToolsRepository } from '../agents/agent-tools.repository';
import { ToolDefinitionsService } from '../agents/tool-definitions.service';
import { ToolSetChanges } from '../agents/tool-set-changes.service';
import { BUILTIN_TOOLS, builtinRow, builtinToolId } from '../builtins/builtin-tools';
import { BuiltinToolsService } from '../builtins/builtin-tools.service';
import { EventOutbox, type PendingEvent } from '../events/event-outbox';
import { loadRegistryConfig } from '../registry.config';
import type { ToolEntity } from '../catalog/tool.entity';
import { ToolsRepository, type ListFilter, type ToolFields } from './tools.repository';
import { ToolsService } from './tools.service';

const ORG = 'org-tools';
const OTHER = 'org-other';
const SCHEMA_TIMEOUT_MS = 1234;
const SOURCE = 'def adder(x: int) -> int:\n    """Adds."""\n    return x\n';

/** A transaction of the fake store: what the outbox staged in it commits with its rows, or not at all. */
class Tx {
  readonly staged: PendingEvent[] = [];
}

/**
 * The registry's Postgres as the service sees it: the tools table, agent attachments and the event
 * outbox, in memory, org-scoped like the real queries; a transaction that throws leaves nothing.
 */
class Store {
  rows: ToolEntity[] = [];
  attachments: Array<{ orgId: string; agentId: string; toolId: string }> = [];
  /** Events committed to the outbox, then the ones drained (published) from it. */
  outbox: PendingEvent[] = [];
  published: PendingEvent[] = [];
  forgotten: string[] = [];
  ensured: string[] = [];
  private seq = 0;
  private ids = 0;

  insert(orgId: string, name: string, fields: ToolFields): ToolEntity {
    const row: ToolEntity = {
      seq: String(++this.seq),
      id: `tool-00000000-0000-4000-8000-${String(++this.ids).padStart(12, '0')}`,
      orgId,
      name,
      toolType: 'custom',
      description: null,
      sourceType: null,
      sourceCode: null,
      jsonSchema: null,
      argsJsonSchema: null,
      tags: [],
      returnCharLimit: 50_000,
      pipRequirements: null,
      npmRequirements: null,
      defaultRequiresApproval: null,
      enableParallelExecution: null,
      createdById: null,
      lastUpdatedById: null,
      metadata: null,
      projectId: null,
      createdAt: new Date(),
      updatedAt: new Date(),
      ...fields,
    };
    this.rows.push(row);
    return row;
  }

  /** Runs `fn` as one transaction: its rows, attachments and staged events commit together or not at all. */
  async tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const before = { rows: this.rows.map((r) => ({ ...r })), attachments: [...this.attachments] };
    const tx = new Tx();
    try {
      const out = await fn(tx);
      this.outbox.push(...tx.staged);
      return out;
    } catch (e) {
      Object.assign(this, before);
      throw e;
    }
  }

  of(orgId: string, name: string): ToolEntity | undefined {
    return this.rows.find((r) => r.orgId === orgId && r.name === name);
  }

  subjects(): string[] {
    return this.published.map((e) => e.descriptor.subject);
  }

  repository(): Partial<ToolsRepository> {
    const copy = (r: ToolEntity | undefined) => (r ? { ...r } : null);
    return {
      findById: async (orgId, id) => copy(this.rows.find((r) => r.orgId === orgId && r.id === id)),
      findByName: async (orgId, name) => copy(this.of(orgId, name)),
      list: async (orgId, f: ListFilter) =>
        this.rows
          .filter((r) => r.orgId === orgId)
          .filter((r) => !f.tags?.length || r.tags.some((t) => f.tags!.includes(t)))
          .filter((r) => !f.toolTypes?.length || f.toolTypes.includes(r.toolType))
          .filter((r) => !f.excludeToolTypes?.includes(r.toolType))
          .filter((r) => !f.afterSeq || BigInt(r.seq) > BigInt(f.afterSeq))
          .slice(0, f.limit)
          .map((r) => ({ ...r })),
      upsertByName: (orgId, name, onCreate, onUpdate, afterWrite, checkExisting) =>
        this.tx(async (tx) => {
          const existing = this.of(orgId, name);
          if (existing) checkExisting?.({ ...existing });
          const row = existing
            ? Object.assign(existing, onUpdate, { updatedAt: new Date() })
            : this.insert(orgId, name, onCreate);
          await afterWrite({ ...row }, !existing, tx as unknown as EntityManager);
          return { tool: { ...row }, created: !existing };
        }),
      deleteById: (orgId, id, beforeDelete) =>
        this.tx(async (tx) => {
          const row = this.rows.find((r) => r.orgId === orgId && r.id === id);
          if (!row) return null;
          await beforeDelete({ ...row }, tx as unknown as EntityManager);
          this.rows = this.rows.filter((r) => r !== row);
          return { ...row };
        }),
    };
  }

  outboxFake(): Partial<EventOutbox> {
    return {
      stage: async (m, events) => void (m as unknown as Tx).staged.push(...events),
      drain: async (orgId) => {
        const mine = this.outbox.filter((e) => e.orgId === orgId);
        // Published as JetStream would get them: each payload checked by its descriptor.
        for (const e of mine) e.descriptor.payload.parse(e.payload);
        this.outbox = this.outbox.filter((e) => e.orgId !== orgId);
        this.published.push(...mine);
        return mine.length;
      },
    };
  }

  attachmentsFake(): Partial<AgentToolsRepository> {
    return {
      detachTools: async (_m, orgId, toolIds): Promise<AgentToolDetachment[]> => {
        const gone = this.attachments.filter((a) => a.orgId === orgId && toolIds.includes(a.toolId));
        this.attachments = this.attachments.filter((a) => !gone.includes(a));
        return gone.map((a) => ({
          agent_id: a.agentId,
          tool_id: a.toolId,
          name: this.rows.find((r) => r.id === a.toolId)!.name,
        }));
      },
    };
  }

  /** The org's built-ins, made on its first request as BuiltinToolsService.ensure does. */
  builtinsFake(): Partial<BuiltinToolsService> {
    return {
      ensure: async (orgId) => {
        this.ensured.push(orgId);
        if (this.rows.some((r) => r.orgId === orgId && r.id === builtinToolId(orgId, BUILTIN_TOOLS[0]!.name))) return;
        for (const b of BUILTIN_TOOLS)
          Object.assign(this.insert(orgId, b.name, builtinRow(b)), { id: builtinToolId(orgId, b.name) });
      },
    };
  }
}

describe('ToolsService (alone: the tools table, outbox, attachments and the schema service are fakes)', () => {
  let store: Store;
  let bus: FakeMessaging;
  let schemaCalls: Array<{ req: unknown; opts: RequestOptions }>;
  let t: TestService<ToolsService>;

  beforeEach(async () => {
    store = new Store();
    schemaCalls = [];
    bus = new FakeMessaging().handle(SchemasGenerate, (req, opts) => {
      schemaCalls.push({ req, opts });
      const name = req.name ?? 'derived_name';
      return {
        json_schema: {
          name,
          description: `generated for ${name}`,
          parameters: { type: 'object' as const, properties: { x: { type: 'integer' } }, required: ['x'] },
        },
        health: 'STRICT_COMPLIANT' as const,
        reasons: [],
      };
    });
    t = await newTestService(ToolsService, {
      config: loadRegistryConfig({ SCHEMA_REQUEST_TIMEOUT_MS: String(SCHEMA_TIMEOUT_MS) }),
      providers: [ToolSetChanges],
      edges: [
        { provide: ToolsRepository, useValue: store.repository() },
        { provide: MessagingClient, useValue: bus.asClient() },
        { provide: EventOutbox, useValue: store.outboxFake() },
        { provide: AgentToolsRepository, useValue: store.attachmentsFake() },
        {
          provide: ToolDefinitionsService,
          useValue: {
            forget: (orgId: string) => void store.forgotten.push(orgId),
          } satisfies Partial<ToolDefinitionsService>,
        },
        { provide: BuiltinToolsService, useValue: store.builtinsFake() },
      ],
    });
  });
  afterEach(() => t.close());

  type Input = RequestIn<typeof ToolsUpsert>['tool'];
  /** The request as the contract parses it (source_type defaulted). */
  const upsert = (tool: Input, org_id = ORG) => t.service.upsert({ org_id, tool: { source_type: 'python', ...tool } });
  const custom = (org = ORG) => store.rows.filter((r) => r.orgId === org && r.toolType === 'custom');

  describe('upsert', () => {
    it('creates a tool with the schema the schema service derives, the defaults, and a created event after the commit', async () => {
      const { tool } = await upsert({ name: 'adder', source_code: SOURCE, pip_requirements: [{ name: 'numpy' }] });
      expect(schemaCalls).toEqual([
        {
          req: { org_id: ORG, source_code: SOURCE, source_type: 'python', name: 'adder' },
          opts: { timeoutMs: SCHEMA_TIMEOUT_MS },
        },
      ]);
      expect(tool).toMatchObject({
        name: 'adder',
        tool_type: 'custom',
        source_code: SOURCE,
        source_type: 'python',
        description: 'generated for adder',
        json_schema: { name: 'adder', description: 'generated for adder' },
        tags: [],
        return_char_limit: 50_000,
        enable_parallel_execution: false,
        pip_requirements: [{ name: 'numpy' }],
      });
      expect(store.of(ORG, 'adder')?.id).toBe(tool.id);
      expect(store.subjects()).toEqual([ToolCreated.subject]);
      expect(store.published[0]!.payload).toMatchObject({
        org_id: ORG,
        tool_id: tool.id,
        tool_name: 'adder',
        tool: { id: tool.id, source_code: SOURCE },
      });
      expect(store.outbox).toEqual([]); // drained, nothing left for the relay
      expect(store.ensured).toEqual([ORG]);
    });

    it('updates the tool of the same name in place: same id, fields not given keep their stored values, an updated event, stale definitions dropped', async () => {
      const first = (
        await upsert({
          name: 'adder',
          source_code: SOURCE,
          tags: ['math'],
          return_char_limit: 10,
          default_requires_approval: true,
        })
      ).tool;
      store.forgotten = [];
      const newSource = SOURCE.replace('Adds.', 'Adds better.');
      const { tool } = await upsert({ name: 'adder', source_code: newSource, description: 'mine' });
      expect(tool).toMatchObject({
        id: first.id,
        source_code: newSource,
        description: 'mine',
        tags: ['math'],
        return_char_limit: 10,
        default_requires_approval: true,
      });
      expect(custom()).toHaveLength(1);
      expect(store.subjects()).toEqual([ToolCreated.subject, ToolUpdated.subject]);
      expect(store.published[1]!.payload).toMatchObject({
        tool_id: first.id,
        tool: { source_code: newSource, description: 'mine' },
      });
      expect(store.forgotten).toEqual([ORG]);
      // A value given again replaces the stored one.
      expect((await upsert({ name: 'adder', source_code: newSource, tags: ['other'] })).tool.tags).toEqual(['other']);
    });

    it('takes a given json_schema as it is (no schema service), with the name and description it carries', async () => {
      const json_schema = {
        name: 'from_schema',
        description: 'described by the schema',
        parameters: { type: 'object', properties: {} },
      };
      const { tool } = await upsert({ source_code: SOURCE, json_schema });
      expect(schemaCalls).toEqual([]);
      expect(tool).toMatchObject({ name: 'from_schema', description: 'described by the schema', json_schema });
      // An explicit name and description win over the schema's.
      expect(
        (await upsert({ name: 'named', description: 'explicit', source_code: SOURCE, json_schema })).tool,
      ).toMatchObject({ name: 'named', description: 'explicit' });
    });

    it('names a tool without a name after the schema the schema service derives', async () => {
      const { tool } = await upsert({ source_code: SOURCE, args_json_schema: { type: 'object', properties: {} } });
      expect(tool.name).toBe('derived_name');
      expect(schemaCalls[0]!.req).toEqual({
        org_id: ORG,
        source_code: SOURCE,
        source_type: 'python',
        args_json_schema: { type: 'object', properties: {} },
      });
    });

    it('registers a client tool with its schema and no source, without asking the schema service', async () => {
      const json_schema = { name: 'ask_user', description: 'Asks.', parameters: { type: 'object', properties: {} } };
      const { tool } = await upsert({ tool_type: 'client', json_schema });
      expect(tool).toMatchObject({
        name: 'ask_user',
        tool_type: 'client',
        source_code: null,
        source_type: null,
        json_schema,
      });
      expect(schemaCalls).toEqual([]);
    });

    it('refuses a tool whose name is nowhere (CONTRACT_VIOLATION) and stores nothing', async () => {
      const err = await upsert({ source_code: SOURCE, json_schema: { description: 'no name', parameters: {} } }).catch(
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: ErrorCode.CONTRACT_VIOLATION, details: { issues: [{ path: 'tool.name' }] } });
      expect(custom()).toEqual([]);
      expect(store.published).toEqual([]);
    });

    it('passes the schema service failure on with its code and stores nothing', async () => {
      bus.handle(SchemasGenerate, () => {
        throw new ToolplaneError(ErrorCode.SCHEMA_GENERATION_FAILED, 'no function named adder');
      });
      await expect(upsert({ name: 'adder', source_code: SOURCE })).rejects.toMatchObject({
        code: ErrorCode.SCHEMA_GENERATION_FAILED,
      });
      expect(custom()).toEqual([]);
      expect(store.published).toEqual([]);
    });

    it.each([
      ['an MCP server owns', 'external_mcp', ErrorCode.TOOL_NAME_CONFLICT],
      ['Toolplane built in', 'letta_builtin', ErrorCode.TOOL_READ_ONLY],
    ])(
      'never overwrites a tool %s (%s → %s): the row and the outbox stay as they were',
      async (_who, toolType, code) => {
        await store.builtinsFake().ensure!(ORG);
        const owned =
          toolType === 'external_mcp'
            ? store.insert(ORG, 'search', { toolType, sourceCode: null, metadata: { mcp: { server_id: 'mcp-1' } } })
            : store.of(ORG, 'run_code')!;
        const before = { ...owned };
        const err = await upsert({
          name: owned.name,
          source_code: SOURCE,
          json_schema: { name: owned.name, parameters: {} },
        }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ToolplaneError);
        expect(err).toMatchObject({ code, details: { tool: owned.name, tool_id: owned.id, tool_type: toolType } });
        expect(store.of(ORG, owned.name)).toEqual(before);
        expect(store.published).toEqual([]);
        expect(store.forgotten).toEqual([]);
      },
    );
  });

  describe('get and list', () => {
    it('finds a tool by id or by name; an unknown one is TOOL_NOT_FOUND', async () => {
      const { tool } = await upsert({ name: 'adder', source_code: SOURCE });
      expect((await t.service.get({ org_id: ORG, id: tool.id })).tool).toEqual(tool);
      expect((await t.service.get({ org_id: ORG, name: 'adder' })).tool).toEqual(tool);
      await expect(t.service.get({ org_id: ORG, name: 'nope' })).rejects.toMatchObject({
        code: ErrorCode.TOOL_NOT_FOUND,
        details: { tool: 'nope' },
      });
    });

    it("lists the org's own tools a page at a time, built-ins only when tool_types asks for them", async () => {
      for (const n of ['t1', 't2', 't3', 't4', 't5'])
        await upsert({ name: n, source_code: SOURCE, tags: n === 't3' ? ['hot'] : [] });
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await t.service.list({ org_id: ORG, limit: 2, ...(cursor ? { cursor } : {}) });
        pages.push(page.tools.map((x) => x.name!));
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      expect(pages).toEqual([['t1', 't2'], ['t3', 't4'], ['t5']]);
      expect((await t.service.list({ org_id: ORG, limit: 50, tags: ['hot'] })).tools.map((x) => x.name)).toEqual([
        't3',
      ]);
      const builtins = await t.service.list({ org_id: ORG, limit: 50, tool_types: ['letta_builtin'] });
      expect(builtins.tools.map((x) => x.name).sort()).toEqual(
        BUILTIN_TOOLS.filter((b) => b.toolType === 'letta_builtin')
          .map((b) => b.name)
          .sort(),
      );
    });

    it("makes sure of the org's built-ins first: a new org's first list or get already sees them", async () => {
      const listed = await t.service.list({ org_id: 'org-new', limit: 50, tool_types: ['letta_builtin'] });
      expect(listed.tools.map((x) => x.id)).toContain(builtinToolId('org-new', 'run_code'));
      expect((await t.service.get({ org_id: 'org-fresh', name: 'run_code' })).tool.id).toBe(
        builtinToolId('org-fresh', 'run_code'),
      );
    });

    it('refuses a cursor it did not issue (CONTRACT_VIOLATION)', async () => {
      await expect(t.service.list({ org_id: ORG, limit: 2, cursor: 'bm90LWEtY3Vyc29y' })).rejects.toMatchObject({
        code: ErrorCode.CONTRACT_VIOLATION,
      });
    });
  });

  describe('delete', () => {
    it("detaches the tool from the org's agents and deletes it, with the detached and deleted events in one commit", async () => {
      const { tool } = await upsert({ name: 'adder', source_code: SOURCE });
      store.attachments.push(
        { orgId: ORG, agentId: 'agent-a', toolId: tool.id },
        { orgId: ORG, agentId: 'agent-b', toolId: tool.id },
      );
      store.forgotten = [];
      expect(await t.service.delete({ org_id: ORG, id: tool.id })).toEqual({ deleted: true });
      expect(store.of(ORG, 'adder')).toBeUndefined();
      expect(store.attachments).toEqual([]);
      expect(store.subjects().slice(1)).toEqual([
        AgentToolsDetached.subject,
        AgentToolsDetached.subject,
        ToolDeleted.subject,
      ]);
      expect(store.published.slice(1, 3).map((e) => e.payload)).toEqual([
        expect.objectContaining({
          agent_id: 'agent-a',
          tools: [{ tool_id: tool.id, tool_name: 'adder' }],
          cause: 'tool_deleted',
        }),
        expect.objectContaining({ agent_id: 'agent-b', cause: 'tool_deleted' }),
      ]);
      expect(store.forgotten).toEqual([ORG]);
      await expect(t.service.get({ org_id: ORG, id: tool.id })).rejects.toMatchObject({
        code: ErrorCode.TOOL_NOT_FOUND,
      });
    });

    it('refuses to delete a built-in (TOOL_READ_ONLY): the row, its attachments and the outbox stay', async () => {
      await store.builtinsFake().ensure!(ORG);
      const id = builtinToolId(ORG, 'run_code');
      store.attachments.push({ orgId: ORG, agentId: 'agent-a', toolId: id });
      await expect(t.service.delete({ org_id: ORG, id })).rejects.toMatchObject({ code: ErrorCode.TOOL_READ_ONLY });
      expect(store.of(ORG, 'run_code')?.id).toBe(id);
      expect(store.attachments).toHaveLength(1);
      expect(store.published).toEqual([]);
    });

    it('answers TOOL_NOT_FOUND for a tool the org does not have', async () => {
      await expect(
        t.service.delete({ org_id: ORG, id: 'tool-00000000-0000-4000-8000-00000000dead' }),
      ).rejects.toMatchObject({ code: ErrorCode.TOOL_NOT_FOUND });
      expect(store.published).toEqual([]);
    });
  });

  describe('org scoping', () => {
    it("never shows, changes or deletes another org's tool, even by its id or name", async () => {
      const mine = (await upsert({ name: 'adder', source_code: SOURCE, tags: ['a'] })).tool;
      store.attachments.push({ orgId: ORG, agentId: 'agent-a', toolId: mine.id });
      await expect(t.service.get({ org_id: OTHER, id: mine.id })).rejects.toMatchObject({
        code: ErrorCode.TOOL_NOT_FOUND,
      });
      await expect(t.service.get({ org_id: OTHER, name: 'adder' })).rejects.toMatchObject({
        code: ErrorCode.TOOL_NOT_FOUND,
      });
      await expect(t.service.delete({ org_id: OTHER, id: mine.id })).rejects.toMatchObject({
        code: ErrorCode.TOOL_NOT_FOUND,
      });
      expect((await t.service.list({ org_id: OTHER, limit: 50 })).tools).toEqual([]);
      // The same name in the other org is the other org's own tool.
      const theirs = (await upsert({ name: 'adder', source_code: SOURCE, tags: ['b'] }, OTHER)).tool;
      expect(theirs.id).not.toBe(mine.id);
      expect(store.of(ORG, 'adder')).toMatchObject({ id: mine.id, tags: ['a'] });
      await t.service.delete({ org_id: OTHER, id: theirs.id });
      expect(store.of(ORG, 'adder')?.id).toBe(mine.id);
      expect(store.attachments).toHaveLength(1);
      expect(store.published.filter((e) => e.orgId === ORG).map((e) => e.descriptor.subject)).toEqual([
        ToolCreated.subject,
      ]);
      expect(store.ensured).toContain(OTHER);
    });
  });
});
