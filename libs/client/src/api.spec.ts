import {
  REQUESTS,
  ToolsExecute,
  ToolsGet,
  ToolsUpsert,
  ToolsExecuteBatch,
  SchemasValidate,
} from '@toolplane/contracts';
import { API, apiEntries, methodPath } from './api';
import { backoffDelay, isIdempotent } from './retry';

describe('the client facade', () => {
  const entries = apiEntries(API);

  it('has a method for every public subject of the catalog, at the path its subject names', () => {
    const publicSubjects = REQUESTS.filter((d) => d.visibility === 'public')
      .map((d) => d.subject)
      .sort();
    expect(entries.map((e) => e.descriptor.subject).sort()).toEqual(publicSubjects);
    for (const e of entries) expect(e.path).toEqual(methodPath(e.descriptor.subject));
  });

  it('exposes no internal subject', () => {
    expect(entries.filter((e) => e.descriptor.visibility !== 'public')).toEqual([]);
  });

  it('camel-cases dashed segments', () => {
    expect(methodPath('toolplane.v1.sandbox-configs.upsert')).toEqual(['sandboxConfigs', 'upsert']);
    expect(methodPath('toolplane.v1.tools.execute-batch')).toEqual(['tools', 'executeBatch']);
  });
});

describe('the retry policy', () => {
  it('retries reads and the schema engine, never writes', () => {
    expect(isIdempotent(ToolsGet, { org_id: 'o', name: 'x' })).toBe(true);
    expect(isIdempotent(SchemasValidate, { json_schema: {} })).toBe(true);
    expect(isIdempotent(ToolsUpsert, { org_id: 'o', tool: {} })).toBe(false);
  });

  it('retries an execute only with an idempotency key (a batch: on every call)', () => {
    expect(isIdempotent(ToolsExecute, { org_id: 'o', tool_name: 't', args: {} })).toBe(false);
    expect(isIdempotent(ToolsExecute, { org_id: 'o', tool_name: 't', args: {}, idempotency_key: 'k' })).toBe(true);
    expect(isIdempotent(ToolsExecuteBatch, { org_id: 'o', calls: [{ idempotency_key: 'a' }, {}] })).toBe(false);
    expect(
      isIdempotent(ToolsExecuteBatch, { org_id: 'o', calls: [{ idempotency_key: 'a' }, { idempotency_key: 'b' }] }),
    ).toBe(true);
  });

  it('backs off exponentially up to a cap, with full jitter', () => {
    const policy = { attempts: 5, baseDelayMs: 100, maxDelayMs: 1_000 };
    expect(backoffDelay(policy, 0, () => 0.999)).toBe(99);
    expect(backoffDelay(policy, 3, () => 0.999)).toBe(799);
    expect(backoffDelay(policy, 10, () => 0.999)).toBe(999);
    expect(backoffDelay(policy, 3, () => 0)).toBe(0);
  });
});
