import { normalizeMcpSchema as sut } from './mcp.normalizer';

describe('MCP schema normalization', () => {
  it('strips $schema, inlines local $refs and makes object schemas explicit, keeping the original beside', () => {
    const input = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        issue: { $ref: '#/definitions/Issue', description: 'The issue.' },
        labels: { type: 'array', items: { $ref: '#/$defs/Label' } },
        extra: { type: 'object' },
      },
      required: ['issue'],
      definitions: { Issue: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] } },
      $defs: { Label: { type: 'string', enum: ['bug', 'feature'] } },
    };
    const frozen = JSON.stringify(input);
    const out = sut(input);
    expect(out.json_schema).toEqual({
      type: 'object',
      properties: {
        issue: {
          type: 'object',
          properties: { title: { type: 'string' } },
          required: ['title'],
          additionalProperties: false,
          description: 'The issue.',
        },
        labels: { type: 'array', items: { type: 'string', enum: ['bug', 'feature'] } },
        extra: { type: 'object', properties: {}, additionalProperties: false },
      },
      required: ['issue'],
      additionalProperties: false,
    });
    expect(out.original_json_schema).toBe(input);
    expect(JSON.stringify(input)).toBe(frozen);
    expect(out.changes).toEqual(
      expect.arrayContaining([
        'inlined local $refs',
        'root: added additionalProperties: false',
        'root.properties.extra: added empty properties',
      ]),
    );
  });

  it('fixes an MCP tool with an empty or property-less input schema', () => {
    expect(sut({}).json_schema).toEqual({ type: 'object', properties: {}, additionalProperties: false });
    expect(sut({ type: 'object' })).toMatchObject({
      json_schema: { type: 'object', properties: {}, additionalProperties: false },
      health: 'STRICT_COMPLIANT',
    });
  });

  it('keeps recursive refs (with their definitions) and gives them a type', () => {
    const input = {
      type: 'object',
      properties: { tree: { $ref: '#/$defs/Node' } },
      required: ['tree'],
      $defs: {
        Node: {
          type: 'object',
          properties: { kids: { type: 'array', items: { $ref: '#/$defs/Node' } } },
          required: ['kids'],
        },
      },
    };
    const out = sut(input);
    const tree = (out.json_schema.properties as Record<string, Record<string, unknown>>).tree!;
    expect(tree.type).toBe('object');
    expect(tree.properties).toEqual({ kids: { type: 'array', items: { $ref: '#/$defs/Node', type: 'object' } } });
    expect(out.json_schema.$defs).toBeDefined();
    expect(out.changes.some((c) => c.includes('is recursive and was kept'))).toBe(true);
  });

  it('never fetches remote refs: they stay, get a type, and the schema is reported INVALID', () => {
    const out = sut({
      type: 'object',
      properties: { a: { $ref: 'https://example.com/schema.json#/A' } },
      required: ['a'],
    });
    expect((out.json_schema.properties as Record<string, unknown>).a).toEqual({
      $ref: 'https://example.com/schema.json#/A',
      type: 'object',
    });
    expect(out.health).toBe('INVALID');
    expect(out.changes.some((c) => c.includes('is not local and was not fetched'))).toBe(true);
  });

  it('keeps a local ref with a malformed %-escape as an unresolved ref (it threw URIError: INTERNAL)', () => {
    const out = sut({
      type: 'object',
      $defs: { A: { type: 'string' } },
      properties: { a: { $ref: '#/$defs/%E0' } },
      required: ['a'],
    });
    expect((out.json_schema.properties as Record<string, unknown>).a).toMatchObject({ $ref: '#/$defs/%E0' });
    expect(out.health).toBe('INVALID');
  });

  it('stops inlining at the depth and size limits (no exponential blow-up)', () => {
    const defs: Record<string, unknown> = { D30: { type: 'string' } };
    for (let i = 0; i < 30; i += 1)
      defs[`D${i}`] = {
        type: 'object',
        properties: { a: { $ref: `#/$defs/D${i + 1}` }, b: { $ref: `#/$defs/D${i + 1}` } },
      };
    // The bound is on the work, not the clock: without the limits this output would be 2^30 nodes.
    const out = sut({ type: 'object', properties: { root: { $ref: '#/$defs/D0' } }, $defs: defs });
    expect(JSON.stringify(out.json_schema).length).toBeLessThan(5_000_000);
    expect(out.changes.some((c) => /nested more than 16 refs deep|inlining stopped after/.test(c))).toBe(true);
  });

  it('turns oneOf into anyOf only when the branches are mutually exclusive', () => {
    const byType = sut({
      type: 'object',
      properties: { v: { oneOf: [{ type: 'string' }, { type: 'integer' }] } },
      required: ['v'],
    });
    expect((byType.json_schema.properties as Record<string, unknown>).v).toEqual({
      anyOf: [{ type: 'string' }, { type: 'integer' }],
    });
    const discriminated = sut({
      type: 'object',
      properties: {
        shape: {
          oneOf: [
            {
              type: 'object',
              properties: { kind: { const: 'circle' }, r: { type: 'number' } },
              required: ['kind', 'r'],
            },
            {
              type: 'object',
              properties: { kind: { const: 'square' }, side: { type: 'number' } },
              required: ['kind', 'side'],
            },
          ],
        },
      },
    });
    expect((discriminated.json_schema.properties as Record<string, Record<string, unknown>>).shape!.anyOf).toHaveLength(
      2,
    );
    const overlapping = sut({
      type: 'object',
      properties: { n: { oneOf: [{ type: 'number' }, { type: 'integer', minimum: 3 }] } },
    });
    expect((overlapping.json_schema.properties as Record<string, Record<string, unknown>>).n!.oneOf).toHaveLength(2);
    expect(overlapping.reasons.some((r) => r.includes("'oneOf' is not supported"))).toBe(true);
  });

  it('de-duplicates anyOf members, collapsing a single survivor', () => {
    const out = sut({
      type: 'object',
      properties: {
        a: { anyOf: [{ type: 'string' }, { type: 'string' }], description: 'A.' },
        b: { anyOf: [{ type: 'string', maxLength: 3 }, { maxLength: 3, type: 'string' }, { type: 'null' }] },
      },
      required: ['a', 'b'],
    });
    expect(out.json_schema.properties).toEqual({
      a: { type: 'string', description: 'A.' },
      b: { anyOf: [{ type: 'string', maxLength: 3 }, { type: 'null' }] },
    });
    expect(out.health).toBe('STRICT_COMPLIANT');
  });

  it('survives non-objects, cycles and 5000 levels of nesting', () => {
    expect(sut('nope')).toMatchObject({ health: 'INVALID', json_schema: {} });
    const cyclic: Record<string, unknown> = { type: 'object' };
    cyclic.properties = { self: cyclic };
    expect(sut(cyclic).health).toBe('INVALID');
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 5000; i += 1) deep = { type: 'object', properties: { x: deep } };
    const out = sut(deep);
    expect(out.health).toBe('INVALID');
    expect(out.json_schema).toBe(deep);
  });
});
