import {
  ErrorCode,
  ExternalToolsStage,
  ExternalToolsSync,
  McpServerProgressed,
  McpServerSynced,
  McpSyncErrorCode,
  ToolplaneError,
  type EventDescriptor,
  type EventOf,
  type ExternalToolInput,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { deferred, expectEventually, FakeMessaging, newTestService, type TestService } from '@toolplane/testing';
import type { z } from 'zod';
import { ConnectionPool, type ServerTarget } from '../connections/connection-pool';
import type { McpClientConnection } from '../connections/mcp-connection';
import { loadMcpSyncConfig } from '../mcp-sync.config';
import type { McpServerEntity } from '../store/mcp-server.entity';
import { TargetBuilder } from '../connections/target-builder';
import { ServersRepository } from '../store/servers.repository';
import { SyncService } from './sync.service';

const ORG = 'org-sync';
const OTHER = 'org-other';
const HEADER_ROOM = 4096;

const serverOf = (n: number, orgId = ORG, toolPrefix: string | null = null): McpServerEntity => ({
  id: `mcp-00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  orgId,
  name: `srv${n}`,
  transport: 'streamable_http',
  command: null,
  args: [],
  url: 'https://mcp.example.test/mcp',
  toolPrefix,
  sealedSecrets: null,
  envKeys: [],
  headerNames: [],
  authType: null,
  account: 'org',
  toolCount: 0,
  lastSync: null,
  pendingAuthorization: null,
  nextSyncAt: new Date(),
  createdAt: new Date(),
  updatedAt: new Date(),
});
const tool = (name: string, description = `does ${name}`) => ({
  name,
  description,
  inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
});

/** The messaging client with the NATS connection info the write reads its message budget from. */
class Bus extends FakeMessaging {
  failProgress = false;
  failSynced = false;

  override async publish<E extends EventDescriptor>(e: E, payload: EventOf<E>): Promise<void> {
    if (this.failProgress && e.subject === McpServerProgressed.subject) throw new Error('events stream down');
    if (this.failSynced && e.subject === McpServerSynced.subject)
      throw new ToolplaneError(ErrorCode.SERVICE_UNAVAILABLE, 'events stream down');
    return super.publish(e, payload);
  }

  events<E extends EventDescriptor>(e: E): Array<EventOf<E>> {
    return this.published.filter((p) => p.subject === e.subject).map((p) => p.payload as EventOf<E>);
  }
}

interface StoredTool {
  id: string;
  /** The MCP server that owns it; null: the org's own custom tool. */
  source: string | null;
  tool: ExternalToolInput;
}

/** The registry's side of external-tools.sync/stage: each org's tools by name, a source's set replaced as the real one does. */
class Registry {
  readonly orgs = new Map<string, Map<string, StoredTool>>();
  readonly attachments: Array<{ orgId: string; agentId: string; toolId: string }> = [];
  private readonly staged = new Map<string, ExternalToolInput[][]>();
  private ids = 0;

  org(orgId: string): Map<string, StoredTool> {
    let m = this.orgs.get(orgId);
    if (!m) this.orgs.set(orgId, (m = new Map()));
    return m;
  }

  names(orgId: string, source?: string): string[] {
    return [...this.org(orgId).entries()]
      .filter(([, t]) => source === undefined || t.source === source)
      .map(([n]) => n);
  }

  put(orgId: string, name: string, source: string | null, t: Partial<ExternalToolInput> = {}): StoredTool {
    const stored = {
      id: `tool-00000000-0000-4000-8000-${String(++this.ids).padStart(12, '0')}`,
      source,
      tool: { name, description: null, json_schema: {}, tags: [], metadata_: {}, ...t },
    };
    this.org(orgId).set(name, stored);
    return stored;
  }

  stage(req: RequestOf<typeof ExternalToolsStage>): ReplyOf<typeof ExternalToolsStage> {
    const pages = this.staged.get(req.sync_id) ?? [];
    pages[req.page] = req.tools;
    this.staged.set(req.sync_id, pages);
    return { staged: req.tools.length };
  }

  sync(req: RequestOf<typeof ExternalToolsSync>): ReplyOf<typeof ExternalToolsSync> {
    const org = this.org(req.org_id);
    const pages = req.staged ? (this.staged.get(req.staged.sync_id) ?? []) : [];
    if (req.staged && pages.filter(Boolean).length !== req.staged.pages)
      throw new ToolplaneError(ErrorCode.CONTRACT_VIOLATION, 'staged pages missing');
    const incoming = [...pages.flat(), ...req.tools];
    const reply: ReplyOf<typeof ExternalToolsSync> = {
      added: [],
      updated: [],
      removed: [],
      unchanged: 0,
      kept: 0,
      detached: 0,
      detachments: [],
      collisions: [],
    };
    for (const t of incoming) {
      const cur = org.get(t.name);
      if (cur && cur.source !== req.source_id) {
        reply.collisions.push({
          name: t.name,
          existing_tool_id: cur.id,
          existing_tool_type: cur.source ? 'external_mcp' : 'custom',
          reason: 'the name is taken',
        });
      } else if (!cur) {
        this.put(req.org_id, t.name, req.source_id, t);
        reply.added.push(t.name);
      } else if (JSON.stringify(cur.tool) !== JSON.stringify(t)) {
        cur.tool = t;
        reply.updated.push(t.name);
      } else {
        reply.unchanged++;
      }
    }
    const listed = new Set(incoming.map((t) => t.name));
    for (const [name, cur] of org) {
      if (cur.source !== req.source_id || listed.has(name)) continue;
      if (req.keep?.includes(name)) reply.kept++;
      else if (req.complete) {
        org.delete(name);
        reply.removed.push(name);
        for (const a of this.attachments.filter((x) => x.orgId === req.org_id && x.toolId === cur.id))
          reply.detachments.push({ agent_id: a.agentId, tool_id: cur.id, name });
      }
    }
    reply.detached = reply.detachments.length;
    return reply;
  }
}

/** The MCP servers behind the connection pool: their listings page by page, under the test's control. */
class McpServers {
  readonly listings = new Map<string, unknown[][]>();
  /** Errors the next connections to a server fail with, one each. */
  readonly failures = new Map<string, Error[]>();
  readonly gates = new Map<string, Promise<void>>();
  /** A page index that fails (a later page of a listing). */
  failPage: number | null = null;
  /** Each listing begun: the server id and the connection attempts allowed. */
  readonly started: Array<{ server: string; attempts: number | undefined }> = [];
  onList?: (serverId: string) => void;

  pool(): Partial<ConnectionPool> {
    return {
      withConnection: async <T>(
        target: ServerTarget,
        _deadline: number,
        fn: (c: McpClientConnection) => Promise<T>,
        attempts?: number,
      ): Promise<T> => {
        this.started.push({ server: target.id, attempts });
        await this.gates.get(target.id);
        const refused = this.failures.get(target.id)?.shift();
        if (refused) throw refused;
        this.onList?.(target.id);
        const pages = this.listings.get(target.id) ?? [[]];
        const client = {
          request: async (req: { params: { cursor?: string } }, schema: z.ZodType) => {
            const i = req.params.cursor ? Number(req.params.cursor.slice(1)) : 0;
            if (i === this.failPage) throw new Error('page timed out');
            return schema.parse({ tools: pages[i], ...(i + 1 < pages.length ? { nextCursor: `p${i + 1}` } : {}) });
          },
        };
        return fn({ client } as unknown as McpClientConnection);
      },
    };
  }
}

describe('SyncService (alone: the MCP servers, the registry and the servers table are fakes)', () => {
  let bus: Bus;
  let registry: Registry;
  let mcp: McpServers;
  let rows: Map<string, McpServerEntity>;
  let t: TestService<SyncService>;

  beforeEach(async () => {
    bus = new Bus();
    registry = new Registry();
    mcp = new McpServers();
    rows = new Map();
    bus.handle(ExternalToolsSync, (req) => registry.sync(req)).handle(ExternalToolsStage, (req) => registry.stage(req));
    const servers: Partial<ServersRepository> = {
      findById: async (orgId, id) => {
        const r = rows.get(id);
        return r && r.orgId === orgId ? { ...r } : null;
      },
      recordSync: async (id, lastSync, toolCount) => {
        const r = rows.get(id);
        if (!r) return null;
        Object.assign(r, { lastSync }, toolCount !== undefined ? { toolCount } : {});
        return { ...r };
      },
    };
    const targets: Partial<TargetBuilder> = {
      of: async (s) => ({
        id: s.id,
        orgId: s.orgId,
        name: s.name,
        transport: s.transport,
        command: s.command,
        args: s.args,
        url: s.url,
        version: s.updatedAt.getTime(),
        secrets: {},
      }),
    };
    t = await newTestService(SyncService, {
      config: loadMcpSyncConfig({}),
      edges: [
        { provide: ServersRepository, useValue: servers },
        { provide: TargetBuilder, useValue: targets },
        { provide: ConnectionPool, useValue: mcp.pool() },
        { provide: MessagingClient, useValue: bus.asClient() },
      ],
    });
  });
  afterEach(() => t.close());

  const add = (s: McpServerEntity, ...pages: unknown[][]) => {
    rows.set(s.id, s);
    mcp.listings.set(s.id, pages);
    return s;
  };
  const sync = (s: McpServerEntity, trigger: 'manual' | 'periodic' = 'manual') => t.service.sync(s, trigger);
  const syncRequests = () => bus.requestsTo(ExternalToolsSync) as Array<RequestOf<typeof ExternalToolsSync>>;

  it('stores every listed tool (prefixed, tagged by server), records the report on the server and publishes it after the progress', async () => {
    const s = add(serverOf(1, ORG, 'gh'), [tool('a'), tool('b')], [tool('c')]);
    const { report, server } = await sync(s);
    expect(report).toMatchObject({
      added: 3,
      updated: 0,
      removed: 0,
      unchanged: 0,
      invalid: 0,
      listed: 3,
      pages: 2,
      errors: [],
      complete: true,
      detached: 0,
    });
    expect(registry.names(ORG, s.id)).toEqual(['gh_a', 'gh_b', 'gh_c']);
    expect(registry.org(ORG).get('gh_a')!.tool).toMatchObject({
      tags: ['mcp:srv1'],
      metadata_: { mcp: { server_id: s.id, tool_name: 'a', health: 'STRICT_COMPLIANT' } },
    });
    expect(syncRequests()).toEqual([
      expect.objectContaining({ org_id: ORG, source_id: s.id, tool_type: 'external_mcp', complete: true }),
    ]);
    expect(mcp.started).toEqual([{ server: s.id, attempts: 2 }]);
    expect(rows.get(s.id)).toMatchObject({
      toolCount: 3,
      lastSync: { trigger: 'manual', ok: true, report, error: null },
    });
    expect(server.toolCount).toBe(3);
    // Progress: each page listed, the write announced and done; then the synced event, last.
    const progress = bus.events(McpServerProgressed);
    expect(progress.map((p) => [p.phase, p.pages, p.listed, p.write])).toEqual([
      ['listing', 1, 2, null],
      ['listing', 2, 3, null],
      ['writing', 2, 3, { tools: 3, pages_done: 0, pages: 1 }],
      ['writing', 2, 3, { tools: 3, pages_done: 1, pages: 1 }],
    ]);
    expect(new Set(progress.map((p) => p.sync_id)).size).toBe(1);
    expect(bus.published.at(-1)).toEqual({
      subject: McpServerSynced.subject,
      payload: expect.objectContaining({
        org_id: ORG,
        server_id: s.id,
        trigger: 'manual',
        ok: true,
        report,
        error: null,
      }),
    });
  });

  it('writes the difference with what is stored: adds, updates, removes (reporting the agents that lost removed tools), counts the unchanged', async () => {
    const s = add(serverOf(1), [tool('a'), tool('b'), tool('c')]);
    await sync(s);
    const c = registry.org(ORG).get('c')!;
    registry.attachments.push(
      { orgId: ORG, agentId: 'agent-1', toolId: c.id },
      { orgId: ORG, agentId: 'agent-2', toolId: c.id },
    );
    mcp.listings.set(s.id, [[tool('a'), tool('b', 'does b better'), tool('d')]]);
    const { report } = await sync(s, 'periodic');
    expect(report).toMatchObject({ added: 1, updated: 1, removed: 1, unchanged: 1, detached: 2, complete: true });
    expect(report.detachments).toEqual([
      { agent_id: 'agent-1', tool_id: c.id, name: 'c' },
      { agent_id: 'agent-2', tool_id: c.id, name: 'c' },
    ]);
    expect(registry.names(ORG, s.id)).toEqual(['a', 'b', 'd']);
    expect(registry.org(ORG).get('b')!.tool.description).toBe('does b better');
    expect(rows.get(s.id)).toMatchObject({ toolCount: 3, lastSync: { trigger: 'periodic', ok: true } });
  });

  it('removes nothing when the listing was partial (a later page failed), and says why', async () => {
    const s = add(serverOf(1), [tool('a')], [tool('b')]);
    await sync(s);
    mcp.failPage = 1;
    const { report } = await sync({ ...s, toolCount: 2 });
    expect(report).toMatchObject({
      complete: false,
      removed: 0,
      unchanged: 1,
      listed: 1,
      pages: 1,
      errors: [{ code: McpSyncErrorCode.MCP_LIST_FAILED }],
    });
    expect(syncRequests().at(-1)).toMatchObject({ complete: false });
    expect(registry.names(ORG, s.id)).toEqual(['a', 'b']);
    expect(rows.get(s.id)!.toolCount).toBe(2);
  });

  it('reports what it could not store as listed: unnamed and duplicate tools, invalid schemas, names held by other tools', async () => {
    const taken = registry.put(ORG, 'taken', null, { description: 'my own' });
    const s = add(serverOf(1), [
      { description: 'no name' },
      tool('ok'),
      tool('ok', 'again'),
      { name: 'bad', inputSchema: 'not a schema' },
      tool('taken'),
    ]);
    const { report } = await sync(s);
    expect(report).toMatchObject({
      listed: 5,
      added: 2,
      invalid: 1,
      invalid_tools: [{ name: 'bad', reasons: [expect.stringContaining('inputSchema')] }],
    });
    expect(report.errors.map((e) => [e.code, e.tool])).toEqual([
      [McpSyncErrorCode.MCP_TOOL_MALFORMED, undefined],
      [McpSyncErrorCode.MCP_TOOL_DUPLICATE, 'ok'],
      [McpSyncErrorCode.TOOL_NAME_COLLISION, 'taken'],
    ]);
    expect(registry.org(ORG).get('taken')).toBe(taken);
    expect(registry.org(ORG).get('taken')!.tool.description).toBe('my own');
    // Stored for the server: what the registry took, the invalid tool included (visible, not runnable).
    expect(registry.names(ORG, s.id)).toEqual(['ok', 'bad']);
    expect(rows.get(s.id)!.toolCount).toBe(2);
  });

  describe('a tool set larger than one registry message', () => {
    const budget = 16 * 1024;
    const many = () => Array.from({ length: 12 }, (_, i) => tool(`t${i}`, `${i} `.padEnd(2000, 'x')));

    beforeEach(() => {
      // The NATS server's max_payload caps the message budget below MCP_SYNC_MESSAGE_BYTES.
      bus.nc.info.max_payload = budget + HEADER_ROOM;
    });

    it('is staged page by page under the budget, then applied by one sync; a tool too large for any message keeps its stored version', async () => {
      const s = add(serverOf(1), [tool('big')]);
      await sync(s);
      mcp.listings.set(s.id, [[...many(), tool('big', 'y'.repeat(20_000))]]);
      const { report } = await sync(s);
      const stages = bus.requestsTo(ExternalToolsStage) as Array<RequestOf<typeof ExternalToolsStage>>;
      expect(stages.length).toBeGreaterThan(1);
      for (const p of stages) expect(Buffer.byteLength(JSON.stringify(p))).toBeLessThanOrEqual(budget);
      expect(stages.map((p) => p.page).sort()).toEqual(stages.map((_, i) => i));
      expect(stages.flatMap((p) => p.tools.map((x) => x.name)).sort()).toEqual(
        many()
          .map((x) => x.name)
          .sort(),
      );
      expect(syncRequests().at(-1)).toEqual({
        org_id: ORG,
        tool_type: 'external_mcp',
        source_id: s.id,
        tools: [],
        complete: true,
        keep: ['big'],
        staged: { sync_id: stages[0]!.sync_id, pages: stages.length },
      });
      expect(new Set(stages.map((p) => p.sync_id)).size).toBe(1);
      expect(report).toMatchObject({
        added: 12,
        removed: 0,
        errors: [{ code: McpSyncErrorCode.TOOL_TOO_LARGE, tool: 'big' }],
      });
      expect(registry.org(ORG).get('big')!.tool.description).toBe('does big');
      expect(rows.get(s.id)!.toolCount).toBe(13);
      expect(bus.events(McpServerProgressed).at(-1)!.write).toEqual({
        tools: 12,
        pages_done: stages.length + 1,
        pages: stages.length + 1,
      });
    });

    it('sends a page the registry did not answer once more; a page it refuses fails the sync and applies nothing', async () => {
      const s = add(serverOf(1), many());
      let timedOut = false;
      bus.handle(ExternalToolsStage, (req) => {
        if (req.page === 1 && !timedOut) {
          timedOut = true;
          throw new ToolplaneError(ErrorCode.REQUEST_TIMEOUT, 'no answer');
        }
        return registry.stage(req);
      });
      await sync(s);
      expect((bus.requestsTo(ExternalToolsStage) as Array<{ page: number }>).filter((p) => p.page === 1)).toHaveLength(
        2,
      );
      expect(registry.names(ORG, s.id)).toHaveLength(12);

      bus.handle(ExternalToolsStage, () => {
        throw new ToolplaneError(ErrorCode.CONTRACT_VIOLATION, 'refused');
      });
      mcp.listings.set(s.id, [
        many()
          .slice(0, 11)
          .map((x) => ({ ...x, description: `${x.description}!` })),
      ]);
      await expect(sync(s)).rejects.toMatchObject({ code: ErrorCode.CONTRACT_VIOLATION });
      expect(syncRequests()).toHaveLength(1);
      expect(registry.names(ORG, s.id)).toHaveLength(12);
      // The refused write is the sync's failure: recorded on the server and published, like an unreachable server.
      expect(rows.get(s.id)!.lastSync).toMatchObject({ ok: false, error: 'refused' });
      expect(bus.events(McpServerSynced).at(-1)).toMatchObject({ ok: false, error: 'refused' });
    });
  });

  it('fails with the typed error when the server cannot be reached: nothing stored is lost, the failure is recorded and published', async () => {
    const s = add(serverOf(1), [tool('a'), tool('b')]);
    await sync(s);
    mcp.failures.set(s.id, [
      new ToolplaneError(ErrorCode.MCP_CONNECTION_FAILED, 'MCP server srv1 refused the connection'),
    ]);
    await expect(sync(s)).rejects.toMatchObject({ code: ErrorCode.MCP_CONNECTION_FAILED });
    expect(syncRequests()).toHaveLength(1);
    expect(registry.names(ORG, s.id)).toEqual(['a', 'b']);
    expect(rows.get(s.id)).toMatchObject({
      toolCount: 2,
      lastSync: { ok: false, report: null, error: 'MCP server srv1 refused the connection' },
    });
    expect(bus.published.at(-1)!.payload).toMatchObject({
      server_id: s.id,
      ok: false,
      report: null,
      error: 'MCP server srv1 refused the connection',
    });
  });

  it('records an unexpected failure as "Internal error", never its message', async () => {
    const s = add(serverOf(1), [tool('a')]);
    mcp.failures.set(s.id, [new Error('ECONNRESET at 10.0.0.7 with token abc')]);
    await expect(sync(s)).rejects.toThrow('ECONNRESET');
    expect(rows.get(s.id)!.lastSync).toMatchObject({ ok: false, error: 'Internal error' });
    expect(JSON.stringify(bus.published)).not.toContain('ECONNRESET');
  });

  it('takes the tools out again when the server was removed while its sync wrote them, and fails MCP_SERVER_NOT_FOUND', async () => {
    const s = add(serverOf(1), [tool('a'), tool('b')]);
    bus.handle(ExternalToolsSync, (req) => {
      rows.delete(s.id); // the removal's delete landed while the write was under way
      return registry.sync(req);
    });
    await expect(sync(s)).rejects.toMatchObject({ code: ErrorCode.MCP_SERVER_NOT_FOUND });
    expect(syncRequests().at(-1)).toMatchObject({ source_id: s.id, tools: [], complete: true });
    expect(registry.names(ORG, s.id)).toEqual([]);
    expect(bus.events(McpServerSynced)).toEqual([]);
  });

  it('runs the syncs of one server one after another, and those of different servers side by side', async () => {
    const [s1, s2] = [add(serverOf(1), [tool('a')]), add(serverOf(2), [tool('b')])];
    const [g1, g2] = [deferred<void>(), deferred<void>()];
    mcp.gates.set(s1.id, g1.promise).set(s2.id, g2.promise);
    const all = Promise.all([sync(s1), sync(s1), sync(s2)]);
    await expectEventually(() => expect(mcp.started.map((x) => x.server)).toEqual([s1.id, s2.id]));
    g1.resolve();
    await expectEventually(() => expect(mcp.started.map((x) => x.server)).toEqual([s1.id, s2.id, s1.id]));
    g2.resolve();
    const [first, second, other] = await all;
    expect([first.report.added, second.report.unchanged, other.report.added]).toEqual([1, 1, 1]);
  });

  it('does not let a failed sync hold up the next one of the server', async () => {
    const s = add(serverOf(1), [tool('a')]);
    mcp.failures.set(s.id, [new ToolplaneError(ErrorCode.MCP_CONNECTION_FAILED, 'down')]);
    const failed = sync(s);
    const next = sync(s);
    await expect(failed).rejects.toMatchObject({ code: ErrorCode.MCP_CONNECTION_FAILED });
    expect((await next).report.added).toBe(1);
    expect(registry.names(ORG, s.id)).toEqual(['a']);
  });

  it("writes only to the server's own org, and refuses a server of another org", async () => {
    const mine = add(serverOf(1), [tool('search')]);
    const theirs = add(serverOf(2, OTHER), [tool('search')]);
    await sync(mine);
    await sync(theirs);
    mcp.listings.set(mine.id, [[]]);
    expect((await sync(mine)).report.removed).toBe(1);
    expect(syncRequests().map((r) => r.org_id)).toEqual([ORG, OTHER, ORG]);
    expect(registry.names(ORG)).toEqual([]);
    expect(registry.names(OTHER, theirs.id)).toEqual(['search']);
    // A server named under another org is not that org's: nothing is listed or written.
    await expect(sync({ ...theirs, orgId: ORG })).rejects.toMatchObject({ code: ErrorCode.MCP_SERVER_NOT_FOUND });
    expect(mcp.started).toHaveLength(3);
    expect(syncRequests()).toHaveLength(3);
  });

  it('finishes the sync when progress events cannot be published', async () => {
    bus.failProgress = true;
    const s = add(serverOf(1), [tool('a')]);
    expect((await sync(s)).report.added).toBe(1);
    expect(bus.events(McpServerProgressed)).toEqual([]);
    expect(bus.events(McpServerSynced)).toEqual([expect.objectContaining({ ok: true })]);
  });

  it('keeps a sync whose write went in as done when only its event cannot be published', async () => {
    const s = add(serverOf(1), [tool('a')]);
    bus.failSynced = true;
    await expect(sync(s)).rejects.toMatchObject({ code: ErrorCode.SERVICE_UNAVAILABLE });
    expect(registry.names(ORG, s.id)).toEqual(['a']);
    expect(rows.get(s.id)!.lastSync).toMatchObject({ ok: true, error: null });
  });
});
