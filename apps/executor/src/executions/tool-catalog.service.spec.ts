import { ToolDeleted, ToolsGet, ToolUpdated, type Tool } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { aTool, deferred, FakeMessaging, newTestService, type TestService } from '@toolplane/testing';
import { loadExecutorConfig } from '../executor.config';
import { ToolCatalogService } from './tool-catalog.service';

const ORG = 'org-catalog';
const ID = 'tool-00000000-0000-4000-8000-0000000000c1';

const toolOf = (description: string, name = 'adder'): Tool => aTool({ id: ID, name, description });

const event = (tool: Tool) => ({
  event_id: `e-${Math.random()}`,
  occurred_at: new Date().toISOString(),
  org_id: ORG,
  tool_id: tool.id,
  tool_name: tool.name,
  tool,
});

describe('ToolCatalogService (alone: the registry and the bus are fakes)', () => {
  let bus: FakeMessaging;
  let t: TestService<ToolCatalogService>;
  /** What the registry answers next (a test swaps it to model an update). */
  let current: Tool;

  beforeEach(async () => {
    bus = new FakeMessaging();
    current = toolOf('v1');
    bus.handle(ToolsGet, () => ({ tool: current }));
    t = await newTestService(ToolCatalogService, {
      config: loadExecutorConfig({}),
      edges: [{ provide: MessagingClient, useValue: bus.asClient() }],
    });
  });
  afterEach(() => t.close());

  it('asks the registry once, then answers from the cache, by id and by name', async () => {
    expect(await t.service.find(ORG, { id: ID })).toMatchObject({ tool: { description: 'v1' }, cached: false });
    expect(await t.service.find(ORG, { id: ID })).toMatchObject({ cached: true });
    expect(await t.service.find(ORG, { name: 'adder' })).toMatchObject({ tool: { description: 'v1' }, cached: false });
    expect(await t.service.find(ORG, { name: 'adder' })).toMatchObject({ cached: true });
    expect(bus.requestsTo(ToolsGet)).toHaveLength(2);
  });

  it('shares one registry request between concurrent lookups of a tool', async () => {
    const slow = deferred<{ tool: Tool }>();
    bus.handle(ToolsGet, () => slow.promise);
    const all = Promise.all([1, 2, 3].map(() => t.service.find(ORG, { id: ID })));
    slow.resolve({ tool: current });
    expect((await all).map((f) => f.tool.description)).toEqual(['v1', 'v1', 'v1']);
    expect(bus.requestsTo(ToolsGet)).toHaveLength(1);
  });

  it('forgets a tool under every key it was found by when it is updated', async () => {
    await t.service.find(ORG, { id: ID });
    await t.service.find(ORG, { name: 'adder' });
    current = toolOf('v2');
    bus.emit(ToolUpdated, event(current));
    expect(await t.service.find(ORG, { id: ID })).toMatchObject({ tool: { description: 'v2' }, cached: false });
    expect(await t.service.find(ORG, { name: 'adder' })).toMatchObject({ tool: { description: 'v2' }, cached: false });
  });

  it.each([
    ['by id', { id: ID }],
    ['by name', { name: 'adder' }],
  ])('never keeps the old tool when an update races a lookup %s (the stale-for-the-TTL bug)', async (_how, ref) => {
    const old = deferred<{ tool: Tool }>();
    bus.handle(ToolsGet, () => old.promise);
    const lookup = t.service.find(ORG, ref);
    // The registry read the old row; the update commits and its event arrives before the old reply does.
    current = toolOf('v2');
    bus.emit(ToolUpdated, event(current));
    old.resolve({ tool: toolOf('v1') });
    expect((await lookup).tool.description).toBe('v1'); // the caller asked before the update
    bus.handle(ToolsGet, () => ({ tool: current }));
    expect(await t.service.find(ORG, ref)).toMatchObject({ tool: { description: 'v2' }, cached: false });
  });

  it('forgets a deleted tool, and keeps other orgs and tools cached', async () => {
    await t.service.find(ORG, { id: ID });
    await t.service.find('org-other', { id: ID });
    bus.emit(ToolDeleted, {
      event_id: 'e-del',
      occurred_at: new Date().toISOString(),
      org_id: ORG,
      tool_id: ID,
      tool_name: 'adder',
    });
    expect(await t.service.find('org-other', { id: ID })).toMatchObject({ cached: true });
    expect(await t.service.find(ORG, { id: ID })).toMatchObject({ cached: false });
  });
});
