import type { ExternalToolInput } from '@toolplane/contracts';
import { planToolSet, type PlanEnvelopes } from './tool-pages';

const tool = (name: string, descriptionBytes = 10): ExternalToolInput => ({
  name,
  description: 'd'.repeat(descriptionBytes),
  json_schema: { name, description: '', parameters: { type: 'object', properties: {} } },
  tags: ['mcp:srv'],
  metadata_: { mcp: { tool_name: name } },
});
const envelopes: PlanEnvelopes = {
  sync: (keep) => ({
    org_id: 'org',
    tool_type: 'external_mcp',
    source_id: 'mcp-x',
    tools: [],
    complete: true,
    ...(keep.length ? { keep } : {}),
    staged: { sync_id: 'u', pages: 10_000 },
  }),
  stage: { org_id: 'org', source_id: 'mcp-x', sync_id: 'u', page: 9_999, tools: [] },
};
const size = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

describe('planning a tool set into registry messages', () => {
  it('sends a set that fits as one message', () => {
    const tools = [tool('a'), tool('b'), tool('c')];
    const plan = planToolSet(tools, 64 * 1024, envelopes);
    expect(plan).toEqual({ pages: null, written: tools, withheld: [], errors: [] });
  });

  it('splits a larger set into consecutive pages, each message under the budget, nothing lost', () => {
    const tools = Array.from({ length: 120 }, (_, i) => tool(`t${i}`, 900 + (i % 7) * 100));
    const budget = 16 * 1024;
    const plan = planToolSet(tools, budget, envelopes);
    expect(plan.pages!.length).toBeGreaterThan(5);
    expect(plan.pages!.flat()).toEqual(tools);
    for (const page of plan.pages!)
      expect(size({ ...(envelopes.stage as object), tools: page })).toBeLessThanOrEqual(budget);
    // Pages are filled: no two neighbours could have been one page.
    for (let i = 1; i < plan.pages!.length; i++)
      expect(
        size({ ...(envelopes.stage as object), tools: [...plan.pages![i - 1]!, plan.pages![i]![0]!] }),
      ).toBeGreaterThan(budget);
    expect(plan.errors).toEqual([]);
  });

  it('withholds and reports a tool too large for any message, and one the registry would refuse', () => {
    const big = tool('huge', 40_000);
    const longName = tool(`n${'x'.repeat(300)}`);
    const tools = [tool('a'), big, longName, tool('b')];
    const plan = planToolSet(tools, 16 * 1024, envelopes);
    expect(plan.pages).toBeNull();
    expect(plan.written.map((t) => t.name)).toEqual(['a', 'b']);
    expect(plan.withheld).toEqual(['huge', longName.name]);
    expect(plan.errors).toEqual([
      expect.objectContaining({
        code: 'TOOL_TOO_LARGE',
        tool: 'huge',
        message: expect.stringContaining('MCP_SYNC_MESSAGE_BYTES 16384'),
      }),
      expect.objectContaining({
        code: 'MCP_TOOL_REJECTED',
        message: expect.stringContaining('name is longer than 256'),
      }),
    ]);
  });

  it('keeps a tool that exactly fits a page', () => {
    const probe = tool('edge', 0);
    const room = 16 * 1024 - size(envelopes.stage) - size(probe);
    const edge = tool('edge', room);
    expect(size({ ...(envelopes.stage as object), tools: [edge] })).toBe(16 * 1024);
    expect(planToolSet([edge], 16 * 1024, envelopes).withheld).toEqual([]);
    expect(planToolSet([tool('edge', room + 1)], 16 * 1024, envelopes).withheld).toEqual(['edge']);
  });
});
