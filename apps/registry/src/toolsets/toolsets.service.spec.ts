import {
  ErrorCode,
  ToolplaneError,
  ToolsetDeleted,
  ToolsetUpserted,
  type RequestOf,
  type ToolsetsUpsert,
} from '@toolplane/contracts';
import { newTestService, type TestService } from '@toolplane/testing';
import type { EntityManager } from 'typeorm';
import { BuiltinToolsService } from '../builtins/builtin-tools.service';
import { EventOutbox, type PendingEvent } from '../events/event-outbox';
import type { ToolEntity } from '../catalog/tool.entity';
import type { ToolsetEntity } from '../catalog/toolset.entity';
import { ToolsetsRepository, type MemberKey, type Membership, type ToolsetDefinition } from './toolsets.repository';
import { decodeMemberCursor, encodeMemberCursor, ToolsetsService } from './toolsets.service';

const ORG = 'org-sets';
const toolId = (n: number) => `tool-00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/** A transaction of the fake store: what the outbox staged in it commits with its rows, or not at all. */
class Tx {
  readonly staged: PendingEvent[] = [];
}

/** The registry's tools and toolsets tables and the outbox, in memory, org-scoped like the real queries. */
class Store {
  tools: ToolEntity[] = [];
  sets: ToolsetEntity[] = [];
  outbox: PendingEvent[] = [];
  published: PendingEvent[] = [];
  drains = 0;
  private seq = 0;

  tool(n: number, name: string, over: Partial<ToolEntity> = {}): ToolEntity {
    const t = {
      seq: String(n),
      id: toolId(n),
      orgId: ORG,
      name,
      toolType: 'custom',
      tags: [],
      defaultRequiresApproval: null,
      ...over,
    } as ToolEntity;
    this.tools.push(t);
    return t;
  }

  private async tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const before = this.sets.map((s) => ({ ...s }));
    const tx = new Tx();
    try {
      const out = await fn(tx);
      this.outbox.push(...tx.staged);
      return out;
    } catch (e) {
      this.sets = before;
      throw e;
    }
  }

  repository(): Partial<ToolsetsRepository> {
    const find = (orgId: string, name: string) => this.sets.find((s) => s.orgId === orgId && s.name === name);
    return {
      findByName: async (orgId, name) => (find(orgId, name) ? { ...find(orgId, name)! } : null),
      page: async (orgId, afterSeq, limit) =>
        this.sets.filter((s) => s.orgId === orgId && (!afterSeq || BigInt(s.seq) > BigInt(afterSeq))).slice(0, limit),
      upsert: (orgId, name, def: ToolsetDefinition, check, afterWrite) =>
        this.tx(async (tx) => {
          const mine = this.tools.filter((t) => t.orgId === orgId);
          check({
            ids: new Set(mine.filter((t) => def.toolIds.includes(t.id)).map((t) => t.id)),
            names: new Set(mine.filter((t) => def.toolNames.includes(t.name)).map((t) => t.name)),
          });
          const existing = find(orgId, name);
          const same = existing && JSON.stringify(pick(existing)) === JSON.stringify(def);
          if (same) return { toolset: { ...existing }, created: false, changed: false };
          const row = existing
            ? Object.assign(existing, def, { updatedAt: new Date() })
            : {
                seq: String(++this.seq),
                id: `toolset-00000000-0000-4000-8000-${String(this.seq).padStart(12, '0')}`,
                orgId,
                name,
                ...def,
                createdAt: new Date(),
                updatedAt: new Date(),
              };
          if (!existing) this.sets.push(row);
          await afterWrite({ ...row }, !existing, tx as unknown as EntityManager);
          return { toolset: { ...row }, created: !existing, changed: true };
        }),
      deleteByName: (orgId, name, beforeDelete) =>
        this.tx(async (tx) => {
          const row = find(orgId, name);
          if (!row) return null;
          await beforeDelete({ ...row }, tx as unknown as EntityManager);
          this.sets = this.sets.filter((s) => s !== row);
          return row;
        }),
      members: async (orgId, set: Membership, after: MemberKey | undefined, limit) =>
        this.tools
          .filter(
            (t) =>
              t.orgId === orgId &&
              (set.toolIds.includes(t.id) ||
                set.toolNames.includes(t.name) ||
                t.tags.some((g) => set.tags.includes(g))),
          )
          .sort((p, q) => (p.name < q.name ? -1 : p.name > q.name ? 1 : p.id < q.id ? -1 : 1))
          .filter((t) => !after || t.name > after.name || (t.name === after.name && t.id > after.id))
          .slice(0, limit),
    };
  }

  outboxFake(): Partial<EventOutbox> {
    return {
      stage: async (m, events) => void (m as unknown as Tx).staged.push(...events),
      drain: async (orgId) => {
        this.drains++;
        const mine = this.outbox.filter((e) => e.orgId === orgId);
        for (const e of mine) e.descriptor.payload.parse(e.payload);
        this.outbox = this.outbox.filter((e) => e.orgId !== orgId);
        this.published.push(...mine);
        return mine.length;
      },
    };
  }
}

function pick(s: ToolsetEntity): ToolsetDefinition {
  return {
    description: s.description,
    instructions: s.instructions,
    toolIds: s.toolIds,
    toolNames: s.toolNames,
    tags: s.tags,
    requiresApproval: s.requiresApproval,
  };
}

describe('ToolsetsService (alone: the tables and the outbox are fakes)', () => {
  let store: Store;
  let ensured: string[];
  let t: TestService<ToolsetsService>;

  beforeEach(async () => {
    store = new Store();
    ensured = [];
    t = await newTestService(ToolsetsService, {
      edges: [
        { provide: ToolsetsRepository, useValue: store.repository() },
        { provide: EventOutbox, useValue: store.outboxFake() },
        {
          provide: BuiltinToolsService,
          useValue: {
            ensure: async (orgId: string) => void ensured.push(orgId),
          } satisfies Partial<BuiltinToolsService>,
        },
      ],
    });
  });
  afterEach(() => t.close());

  const upsert = (toolset: RequestOf<typeof ToolsetsUpsert>['toolset']) => t.service.upsert({ org_id: ORG, toolset });
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => e as ToolplaneError,
    );

  describe('upsert', () => {
    it("stores the definition with each list once, in the order given, and publishes its event after the commit (the org's built-ins made first)", async () => {
      store.tool(1, 'one');
      const r = await upsert({
        name: 'set',
        tool_ids: [toolId(1), toolId(1)],
        tool_names: ['one'],
        tags: ['b', 'a', 'b'],
      });
      expect(r).toMatchObject({
        created: true,
        toolset: {
          name: 'set',
          tool_ids: [toolId(1)],
          tool_names: ['one'],
          tags: ['b', 'a'],
          description: null,
          instructions: null,
          requires_approval: null,
        },
      });
      expect(store.published.map((e) => [e.descriptor.subject, e.payload.toolset_id, e.payload.name])).toEqual([
        [ToolsetUpserted.subject, r.toolset.id, 'set'],
      ]);
      expect(store.outbox).toEqual([]);
      expect(ensured).toEqual([ORG]);
    });

    it('refuses every unknown id and name at once with TOOL_NOT_FOUND, storing and publishing nothing', async () => {
      store.tool(1, 'one');
      store.tool(2, 'theirs', { orgId: 'org-other' });
      const e = await refusal(
        upsert({ name: 'set', tool_ids: [toolId(1), toolId(2)], tool_names: ['one', 'theirs', 'gone'] }),
      );
      expect(e).toMatchObject({
        code: ErrorCode.TOOL_NOT_FOUND,
        retryable: false,
        details: { tools: [toolId(2), 'theirs', 'gone'] },
      });
      expect(e?.message).toMatch(/^No tool .*toolset was not stored$/);
      expect([store.sets, store.published, store.outbox]).toEqual([[], [], []]);
    });

    it('replaces the whole definition (same id); the same definition again writes, stages and drains nothing', async () => {
      store.tool(1, 'one');
      const first = await upsert({ name: 'set', tool_names: ['one'], description: 'd', requires_approval: true });
      const again = await upsert({ name: 'set', tool_names: ['one'], description: 'd', requires_approval: true });
      expect(again).toEqual({ created: false, toolset: first.toolset });
      expect([store.published.length, store.drains]).toEqual([1, 1]);
      const replaced = await upsert({ name: 'set', tags: ['x'] });
      expect(replaced).toMatchObject({
        created: false,
        toolset: { id: first.toolset.id, tool_names: [], tags: ['x'], description: null, requires_approval: null },
      });
      expect(store.published.map((e) => (e.payload.toolset as { tags: string[] }).tags)).toEqual([[], ['x']]);
    });
  });

  describe('tools', () => {
    it("answers the set's approval when it has one, else each tool's default, else false", async () => {
      store.tool(1, 'guarded', { tags: ['t'], defaultRequiresApproval: true });
      store.tool(2, 'relaxed', { tags: ['t'], defaultRequiresApproval: false });
      store.tool(3, 'plain', { tags: ['t'] });
      const approvals = async () =>
        Object.fromEntries(
          (await t.service.tools({ org_id: ORG, name: 'set', limit: 50 })).tools.map((m) => [
            m.tool.name,
            m.requires_approval,
          ]),
        );
      for (const [override, want] of [
        [null, { guarded: true, plain: false, relaxed: false }],
        [true, { guarded: true, plain: true, relaxed: true }],
        [false, { guarded: false, plain: false, relaxed: false }],
      ] as const) {
        await upsert({ name: 'set', tags: ['t'], requires_approval: override });
        expect([override, await approvals()]).toEqual([override, want]);
      }
    });

    it('pages with a cursor naming the last tool of the page, and no cursor after the last page', async () => {
      for (const [n, name] of ['c', 'a', 'd', 'b', 'e'].entries()) store.tool(n + 1, name, { tags: ['p'] });
      await upsert({ name: 'set', tags: ['p'] });
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await t.service.tools({ org_id: ORG, name: 'set', limit: 2, cursor });
        pages.push(page.tools.map((m) => m.tool.name!));
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      expect(pages).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
      // Exactly one page's worth left: no cursor to an empty page.
      expect((await t.service.tools({ org_id: ORG, name: 'set', limit: 5 })).next_cursor).toBeNull();
    });

    it('refuses an unknown set with TOOLSET_NOT_FOUND and a cursor it did not issue with CONTRACT_VIOLATION', async () => {
      expect(await refusal(t.service.tools({ org_id: ORG, name: 'nope', limit: 5 }))).toMatchObject({
        code: ErrorCode.TOOLSET_NOT_FOUND,
        retryable: false,
        details: { toolset: 'nope' },
      });
      expect(await refusal(t.service.get({ org_id: ORG, name: 'nope' }))).toMatchObject({
        code: ErrorCode.TOOLSET_NOT_FOUND,
      });
      store.tool(1, 'one');
      await upsert({ name: 'set', tool_names: ['one'] });
      for (const cursor of [
        'x',
        Buffer.from('["m","a","not-an-id"]').toString('base64url'),
        Buffer.from('s:12').toString('base64url'),
      ]) {
        expect([
          cursor,
          (await refusal(t.service.tools({ org_id: ORG, name: 'set', limit: 5, cursor })))?.code,
        ]).toEqual([cursor, ErrorCode.CONTRACT_VIOLATION]);
      }
    });
  });

  it('deletes with its event, and answers deleted: false (nothing published) when there is no such set', async () => {
    store.tool(1, 'one');
    const { toolset } = await upsert({ name: 'set', tool_names: ['one'] });
    expect(await t.service.delete({ org_id: ORG, name: 'set' })).toEqual({ deleted: true });
    expect(await t.service.delete({ org_id: ORG, name: 'set' })).toEqual({ deleted: false });
    expect(store.published.map((e) => [e.descriptor.subject, e.payload.toolset_id])).toEqual([
      [ToolsetUpserted.subject, toolset.id],
      [ToolsetDeleted.subject, toolset.id],
    ]);
    expect(store.sets).toEqual([]);
  });

  it('member cursors carry the (name, id) they were made from', () => {
    const key = { name: 'naïve tool', id: toolId(7) };
    expect(decodeMemberCursor(encodeMemberCursor(key))).toEqual(key);
  });
});
