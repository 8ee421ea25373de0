/**
 * Published tool sets over the public API: upsert (a whole definition, idempotent), get, list,
 * delete; members resolved live by id, name and tag (a tool made later with a listed tag is in the
 * set, a deleted one is not); the set's approval override; validation that stores nothing; orgs
 * kept apart; the events on the TOOLPLANE_EVENTS stream; and the `toolplane toolsets` CLI.
 */
import { DeliverPolicy, jetstream, type ConsumerMessages } from '@nats-io/jetstream';
import { ToolsetDeleted, ToolsetUpserted } from '@toolplane/contracts';
import { expectEventually } from '@toolplane/testing';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testPrefix, uniqueOrg } from '../support/context';
import { natsUrl, ROOT } from '../support/env';
import { RawClient } from '../support/nats-client';
import { pythonTool } from '../support/tools';

const MISSING_ID = 'tool-00000000-0000-4000-8000-000000000000';

describe('toolsets', () => {
  let client: RawClient;
  let messages: ConsumerMessages | undefined;
  /** Every toolset event read from the stream since the suite began. */
  const events: Array<{ subject: string; payload: any }> = [];
  const ok = (r: any) => {
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return r;
  };
  const tool = async (org: string, name: string, extra: Record<string, unknown> = {}) =>
    ok(
      await client.req('toolplane.v1.tools.upsert', {
        org_id: org,
        tool: { source_code: pythonTool(name, 'return 1'), ...extra },
      }),
    ).tool;
  const upsert = (org: string, toolset: Record<string, unknown>, token?: string) =>
    client.req('toolplane.v1.toolsets.upsert', { org_id: org, toolset }, token ? { token } : {});
  const get = (org: string, name: string, token?: string) =>
    client.req('toolplane.v1.toolsets.get', { org_id: org, name }, token ? { token } : {});
  const members = (org: string, name: string, extra: Record<string, unknown> = {}) =>
    client.req('toolplane.v1.toolsets.tools.list', { org_id: org, name, ...extra });
  const names = async (org: string, name: string) =>
    ok(await members(org, name, { limit: 200 })).tools.map((t: any) => t.tool.name);

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
    const consumer = await jetstream(client.nc).consumers.get(`${testPrefix()}_TOOLPLANE_EVENTS`, {
      filter_subjects: client.subject('toolplane.v1.events.toolset.*'),
      deliver_policy: DeliverPolicy.New,
    });
    messages = await consumer.consume();
    void (async () => {
      for await (const m of messages!)
        events.push({ subject: m.subject.slice(testPrefix().length + 1), payload: m.json() });
    })();
  });
  afterAll(async () => {
    await messages?.close();
    await client?.close();
  });

  it('upserts a whole definition (same id, nothing changed by the same one again), gets, lists and deletes it', async () => {
    const org = uniqueOrg('toolsets');
    await tool(org, 'lookup');
    const first = ok(
      await upsert(org, {
        name: 'support',
        description: 'For support agents.',
        instructions: 'Look things up first.',
        tool_names: ['lookup'],
      }),
    );
    expect(first).toEqual({
      created: true,
      toolset: {
        id: expect.stringMatching(/^toolset-[0-9a-f-]{36}$/),
        org_id: org,
        name: 'support',
        description: 'For support agents.',
        instructions: 'Look things up first.',
        tool_ids: [],
        tool_names: ['lookup'],
        tags: [],
        requires_approval: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
    expect(ok(await get(org, 'support'))).toEqual({ toolset: first.toolset });
    expect(
      ok(
        await upsert(org, {
          name: 'support',
          description: 'For support agents.',
          instructions: 'Look things up first.',
          tool_names: ['lookup', 'lookup'],
        }),
      ),
    ).toEqual({ created: false, toolset: first.toolset });
    // A replace: what is not given is gone.
    const second = ok(await upsert(org, { name: 'support', tags: ['crm'], requires_approval: true }));
    expect(second).toMatchObject({
      created: false,
      toolset: {
        id: first.toolset.id,
        description: null,
        instructions: null,
        tool_names: [],
        tags: ['crm'],
        requires_approval: true,
      },
    });
    expect(ok(await get(org, 'support')).toolset).toEqual(second.toolset);
    expect(ok(await client.req('toolplane.v1.toolsets.list', { org_id: org }))).toEqual({
      toolsets: [second.toolset],
      next_cursor: null,
    });

    expect(ok(await client.req('toolplane.v1.toolsets.delete', { org_id: org, name: 'support' }))).toEqual({
      deleted: true,
    });
    expect((await get(org, 'support')).error).toMatchObject({
      code: 'TOOLSET_NOT_FOUND',
      retryable: false,
      details: { toolset: 'support' },
    });
    expect((await members(org, 'support')).error.code).toBe('TOOLSET_NOT_FOUND');
    expect(ok(await client.req('toolplane.v1.toolsets.delete', { org_id: org, name: 'support' }))).toEqual({
      deleted: false,
    });
    expect(ok(await client.req('toolplane.v1.toolsets.list', { org_id: org })).toolsets).toEqual([]);
    expect(ok(await client.req('toolplane.v1.tools.get', { org_id: org, name: 'lookup' })).tool.name).toBe('lookup'); // its tools stay
  });

  it('resolves members now: by id, by name, by tag (a tool tagged later is in, a deleted or untagged one is out)', async () => {
    const org = uniqueOrg('members');
    const byId = await tool(org, 'by_id');
    const byName = await tool(org, 'by_name');
    await tool(org, 'tagged', { tags: ['crm', 'other'] });
    await tool(org, 'outsider', { tags: ['other'] });
    ok(await upsert(org, { name: 'mixed', tool_ids: [byId.id], tool_names: ['by_name'], tags: ['crm'] }));
    expect(await names(org, 'mixed')).toEqual(['by_id', 'by_name', 'tagged']);

    await tool(org, 'a_later', { tags: ['crm'] });
    expect(await names(org, 'mixed')).toEqual(['a_later', 'by_id', 'by_name', 'tagged']);
    ok(await client.req('toolplane.v1.tools.delete', { org_id: org, id: byId.id }));
    ok(await client.req('toolplane.v1.tools.delete', { org_id: org, id: byName.id }));
    await tool(org, 'tagged', { tags: ['other'] });
    expect(await names(org, 'mixed')).toEqual(['a_later']);
    // A name is a name: a new tool of that name is a member again; an id is that tool only.
    const again = await tool(org, 'by_name');
    await tool(org, 'by_id');
    const now = ok(await members(org, 'mixed')).tools;
    expect(now.map((t: any) => [t.tool.name, t.tool.id])).toEqual([
      ['a_later', expect.any(String)],
      ['by_name', again.id],
    ]);
    expect(now[1]).toEqual({ tool: again, requires_approval: false });
  });

  it("applies the set's requires_approval over each tool's default; null leaves each tool's own", async () => {
    const org = uniqueOrg('approval');
    await tool(org, 'guarded', { default_requires_approval: true, tags: ['t'] });
    await tool(org, 'relaxed', { default_requires_approval: false, tags: ['t'] });
    await tool(org, 'plain', { tags: ['t'] });
    const approvals = async () =>
      Object.fromEntries(ok(await members(org, 'set')).tools.map((t: any) => [t.tool.name, t.requires_approval]));
    ok(await upsert(org, { name: 'set', tags: ['t'] }));
    expect(await approvals()).toEqual({ guarded: true, plain: false, relaxed: false });
    ok(await upsert(org, { name: 'set', tags: ['t'], requires_approval: true }));
    expect(await approvals()).toEqual({ guarded: true, plain: true, relaxed: true });
    ok(await upsert(org, { name: 'set', tags: ['t'], requires_approval: false }));
    expect(await approvals()).toEqual({ guarded: false, plain: false, relaxed: false });
    ok(await upsert(org, { name: 'set', tags: ['t'], requires_approval: null }));
    expect(await approvals()).toEqual({ guarded: true, plain: false, relaxed: false });
  });

  it('pages members by name then id and sets in creation order, with cursors', async () => {
    const org = uniqueOrg('pages');
    for (const n of ['echo', 'alpha', 'delta', 'charlie', 'bravo']) await tool(org, n, { tags: ['p'] });
    ok(await upsert(org, { name: 'paged', tags: ['p'] }));
    const seen: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = ok(await members(org, 'paged', { limit: 2, ...(cursor ? { cursor } : {}) }));
      seen.push(page.tools.map((t: any) => t.tool.name));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual([['alpha', 'bravo'], ['charlie', 'delta'], ['echo']]);
    expect((await members(org, 'paged', { cursor: 'bm90LWEtY3Vyc29y' })).error.code).toBe('CONTRACT_VIOLATION');

    for (const n of ['zeta', 'eta']) ok(await upsert(org, { name: n, tags: ['p'] }));
    const first = ok(await client.req('toolplane.v1.toolsets.list', { org_id: org, limit: 2 }));
    expect(first.toolsets.map((s: any) => s.name)).toEqual(['paged', 'zeta']);
    const rest = ok(
      await client.req('toolplane.v1.toolsets.list', { org_id: org, limit: 2, cursor: first.next_cursor }),
    );
    expect(rest).toEqual({ toolsets: [expect.objectContaining({ name: 'eta' })], next_cursor: null });
  });

  it('refuses a bad name, a set naming nothing, and unknown tools (TOOL_NOT_FOUND): nothing stored, a stored set unchanged', async () => {
    const org = uniqueOrg('invalid');
    await tool(org, 'real');
    for (const name of ['Support', '-lead', 'has space', 'a'.repeat(65), '']) {
      expect((await upsert(org, { name, tool_names: ['real'] })).error).toMatchObject({
        code: 'CONTRACT_VIOLATION',
        details: { issues: [expect.objectContaining({ path: 'toolset.name' })] },
      });
    }
    expect((await upsert(org, { name: 'empty' })).error.code).toBe('CONTRACT_VIOLATION');
    expect((await upsert(org, { name: 'empty', tool_ids: [], tool_names: [], tags: [] })).error.code).toBe(
      'CONTRACT_VIOLATION',
    );
    expect((await upsert(org, { name: 'wordy', tags: ['x'], description: 'd'.repeat(4097) })).error.code).toBe(
      'CONTRACT_VIOLATION',
    );
    expect(
      (await upsert(org, { name: 'wordy', tags: Array.from({ length: 201 }, (_, i) => `t${i}`) })).error.code,
    ).toBe('CONTRACT_VIOLATION');

    const unknown = await upsert(org, { name: 'ghost', tool_ids: [MISSING_ID], tool_names: ['real', 'nope'] });
    expect(unknown.error).toMatchObject({
      code: 'TOOL_NOT_FOUND',
      retryable: false,
      details: { tools: [MISSING_ID, 'nope'] },
    });
    expect((await get(org, 'ghost')).error.code).toBe('TOOLSET_NOT_FOUND');
    const kept = ok(await upsert(org, { name: 'kept', tool_names: ['real'] })).toolset;
    expect(
      (await upsert(org, { name: 'kept', tool_names: ['real', 'nope'], requires_approval: true })).error.code,
    ).toBe('TOOL_NOT_FOUND');
    expect(ok(await get(org, 'kept')).toolset).toEqual(kept);
    expect(
      ok(await client.req('toolplane.v1.toolsets.list', { org_id: org })).toolsets.map((s: any) => s.name),
    ).toEqual(['kept']);
  });

  it("keeps orgs apart: another org's token is FORBIDDEN, its tools are not found, one name in two orgs is two sets", async () => {
    const a = uniqueOrg('ts-a');
    const b = uniqueOrg('ts-b');
    const toolA = await tool(a, 'shared');
    const toolB = await tool(b, 'shared');
    const setA = ok(await upsert(a, { name: 'same', tool_names: ['shared'], description: 'a' })).toolset;
    const setB = ok(await upsert(b, { name: 'same', tool_names: ['shared'], description: 'b' })).toolset;
    expect(setA.id).not.toBe(setB.id);
    expect(ok(await members(a, 'same')).tools.map((t: any) => t.tool.id)).toEqual([toolA.id]);
    expect(ok(await members(b, 'same')).tools.map((t: any) => t.tool.id)).toEqual([toolB.id]);

    const tokenB = await client.tokenFor(b);
    const attempts: Array<[string, Record<string, unknown>]> = [
      ['toolplane.v1.toolsets.upsert', { org_id: a, toolset: { name: 'same', tool_ids: [toolB.id] } }],
      ['toolplane.v1.toolsets.get', { org_id: a, name: 'same' }],
      ['toolplane.v1.toolsets.list', { org_id: a }],
      ['toolplane.v1.toolsets.delete', { org_id: a, name: 'same' }],
      ['toolplane.v1.toolsets.tools.list', { org_id: a, name: 'same' }],
    ];
    for (const [subject, body] of attempts)
      expect([subject, (await client.req(subject, body, { token: tokenB })).error?.code]).toEqual([
        subject,
        'FORBIDDEN',
      ]);
    // Naming itself, b cannot put a's tool in its set.
    expect((await upsert(b, { name: 'same', tool_ids: [toolA.id] }, tokenB)).error).toMatchObject({
      code: 'TOOL_NOT_FOUND',
      details: { tools: [toolA.id] },
    });
    expect(ok(await get(a, 'same')).toolset).toEqual(setA);
    expect(ok(await get(b, 'same')).toolset).toEqual(setB);

    const reader = (await client.mint(a, { scopes: ['tools:read'] })).token;
    expect((await upsert(a, { name: 'same', tags: ['x'] }, reader)).error).toMatchObject({
      code: 'FORBIDDEN',
      message: expect.stringMatching(/tools:write/),
    });
    expect(
      (await client.req('toolplane.v1.toolsets.delete', { org_id: a, name: 'same' }, { token: reader })).error.code,
    ).toBe('FORBIDDEN');
    expect(ok(await get(a, 'same', reader)).toolset).toEqual(setA);
  });

  it('publishes upserted and deleted events on TOOLPLANE_EVENTS, none for an upsert that changed nothing', async () => {
    const org = uniqueOrg('ts-events');
    await tool(org, 'evented');
    const created = ok(await upsert(org, { name: 'watched', tool_names: ['evented'] })).toolset;
    ok(await upsert(org, { name: 'watched', tool_names: ['evented'] }));
    const replaced = ok(
      await upsert(org, { name: 'watched', tool_names: ['evented'], requires_approval: true }),
    ).toolset;
    ok(await client.req('toolplane.v1.toolsets.delete', { org_id: org, name: 'watched' }));
    // One org's events are published in commit order: once the delete's is here, an event of the unchanged upsert would be too.
    const seen = await expectEventually(
      () => {
        const mine = events.filter((e) => e.payload.org_id === org);
        if (!mine.some((e) => e.subject === ToolsetDeleted.subject))
          throw new Error(`no deleted event yet: ${JSON.stringify(mine)}`);
        return mine;
      },
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    expect(seen.map((e) => e.subject)).toEqual([
      ToolsetUpserted.subject,
      ToolsetUpserted.subject,
      ToolsetDeleted.subject,
    ]);
    expect(seen[0]!.payload).toEqual({
      event_id: expect.any(String),
      occurred_at: expect.any(String),
      org_id: org,
      toolset_id: created.id,
      name: 'watched',
      toolset: created,
    });
    expect(seen[1]!.payload.toolset).toEqual(replaced);
    expect(seen[2]!.payload).toEqual({
      event_id: expect.any(String),
      occurred_at: expect.any(String),
      org_id: org,
      toolset_id: created.id,
      name: 'watched',
    });
    for (const e of seen)
      expect(
        (e.subject === ToolsetDeleted.subject ? ToolsetDeleted : ToolsetUpserted).payload.safeParse(e.payload).success,
      ).toBe(true);
  });

  it('is driven by the `toolplane toolsets` CLI (JSON and table output, exit codes)', async () => {
    const org = uniqueOrg('ts-cli');
    await tool(org, 'cli_one', { tags: ['cli'] });
    await tool(org, 'cli_two');
    const env = {
      TOOLPLANE_NATS_URL: natsUrl(),
      TOOLPLANE_TOKEN: await client.tokenFor(org),
      TOOLPLANE_ORG: org,
      TOOLPLANE_PREFIX: testPrefix(),
    };
    const up = await cli(
      [
        '--json',
        'toolsets',
        'upsert',
        'cli-set',
        '--tag',
        'cli',
        '--tool',
        'cli_two',
        '--requires-approval',
        'true',
        '--instructions',
        'Be brief.',
      ],
      env,
    );
    expect(up.code).toBe(0);
    expect(JSON.parse(up.stdout)).toMatchObject({
      created: true,
      toolset: {
        name: 'cli-set',
        tags: ['cli'],
        tool_names: ['cli_two'],
        requires_approval: true,
        instructions: 'Be brief.',
      },
    });
    const tools = await cli(['--json', 'toolsets', 'tools', 'cli-set'], env);
    expect(JSON.parse(tools.stdout).tools.map((t: any) => [t.tool.name, t.requires_approval])).toEqual([
      ['cli_one', true],
      ['cli_two', true],
    ]);
    const table = await cli(['toolsets', 'list'], env);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]!.split(/\s{2,}/)).toEqual([
      'NAME',
      'ID',
      'TOOL_NAMES',
      'TOOL_IDS',
      'TAGS',
      'REQUIRES_APPROVAL',
      'DESCRIPTION',
    ]);
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^cli-set\s+toolset-[0-9a-f-]+\s+cli_two\s+-\s+cli\s+true\s+-$/),
    ]);
    expect(JSON.parse((await cli(['--json', 'toolsets', 'get', 'cli-set'], env)).stdout).toolset.name).toBe('cli-set');
    expect(
      (await cli(['toolsets', 'upsert', 'cli-set', '--tag', 'cli', '--requires-approval', 'maybe'], env)).code,
    ).toBe(2);
    expect((await cli(['--json', 'toolsets', 'upsert', 'cli-set', '--tool', 'no_such_tool'], env)).code).toBe(3);
    expect(await cli(['toolsets', 'delete', 'cli-set'], env)).toMatchObject({ code: 0, stdout: 'deleted cli-set\n' });
    expect((await cli(['--json', 'toolsets', 'delete', 'cli-set'], env)).code).toBe(3);
    const missing = await cli(['--json', 'toolsets', 'get', 'cli-set'], env);
    expect([missing.code, JSON.parse(missing.stdout).error.code]).toEqual([3, 'TOOLSET_NOT_FOUND']);
  });
});

/** Runs the built CLI (dist/tools/cli/main.js) with a clean env plus `env`. */
function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [join(ROOT, 'dist', 'tools', 'cli', 'main.js'), ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: tmpdir(),
        TOOLPLANE_CONFIG: join(tmpdir(), 'no-such-profiles.json'),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
