import { TOOL_ID } from '@toolplane/contracts';
import { BUILTIN_TOOLS, builtinRow, builtinToolId } from './builtin-tools';

describe('built-in tools', () => {
  it('derives one id per org and name: a UUIDv5 in the tool id format, the same every time', () => {
    const sut = builtinToolId;
    const id = sut('acme', 'run_code');
    expect(id).toMatch(TOOL_ID);
    expect(id).toMatch(/^tool-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(sut('acme', 'run_code')).toBe(id);
    expect(sut('acme2', 'run_code')).not.toBe(id);
    expect(sut('acme', 'web_search')).not.toBe(id);
    // The separator keeps ("ab", "c") and ("a", "bc") apart.
    expect(sut('ab', 'c')).not.toBe(sut('a', 'bc'));
  });

  it('has unique names, and rows shaped as the reference stores them', () => {
    expect(new Set(BUILTIN_TOOLS.map((t) => t.name)).size).toBe(BUILTIN_TOOLS.length);
    for (const t of BUILTIN_TOOLS) {
      const row = builtinRow(t);
      expect(row).toMatchObject({
        tags: [t.toolType],
        returnCharLimit: 50_000,
        sourceType: 'python',
        sourceCode: null,
        jsonSchema: { name: t.name },
      });
      for (const r of t.parameters.required) expect(Object.keys(t.parameters.properties)).toContain(r);
    }
  });
});
