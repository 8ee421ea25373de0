import { toStrictSchema as sut } from './strict.converter';

describe('strict-mode conversion', () => {
  const generated = {
    name: 'search',
    description: 'Search.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'Query.' },
        limit: { type: 'integer', description: 'Limit.' },
        mode: { type: 'string', enum: ['a', 'b'], description: 'Mode.' },
        where: {
          type: 'object',
          properties: {
            lat: { type: 'number', description: 'Lat.' },
            label: { type: 'string', description: 'Label.' },
          },
          required: ['lat'],
          description: 'Where.',
        },
        tags: {
          type: 'array',
          items: { type: 'object', properties: { k: { type: 'string' } }, required: [] },
          description: 'Tags.',
        },
        either: {
          anyOf: [{ type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] }, { type: 'string' }],
          description: 'Either.',
        },
      },
      required: ['query', 'where', 'tags', 'either'],
    },
  };

  it('makes every property required, optional ones nullable, and objects closed, recursively', () => {
    const out = sut(generated);
    expect(out).toMatchObject({ strict: true, health: 'STRICT_COMPLIANT', reasons: [] });
    expect(out.json_schema).toEqual({
      name: 'search',
      description: 'Search.',
      strict: true,
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', description: 'Query.' },
          limit: { type: ['integer', 'null'], description: 'Limit.' },
          mode: { type: ['string', 'null'], enum: ['a', 'b', null], description: 'Mode.' },
          where: {
            type: 'object',
            properties: {
              lat: { type: 'number', description: 'Lat.' },
              label: { type: ['string', 'null'], description: 'Label.' },
            },
            required: ['lat', 'label'],
            additionalProperties: false,
            description: 'Where.',
          },
          tags: {
            type: 'array',
            items: {
              type: 'object',
              properties: { k: { type: ['string', 'null'] } },
              required: ['k'],
              additionalProperties: false,
            },
            description: 'Tags.',
          },
          either: {
            anyOf: [
              { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'], additionalProperties: false },
              { type: 'string' },
            ],
            description: 'Either.',
          },
        },
        required: ['query', 'limit', 'mode', 'where', 'tags', 'either'],
        additionalProperties: false,
      },
    });
  });

  it('never modifies its input', () => {
    const before = JSON.stringify(generated);
    sut(generated);
    expect(JSON.stringify(generated)).toBe(before);
  });

  it('drops `default` everywhere (not a strict-mode keyword), keeping the rest and the input intact', () => {
    const withDefaults = {
      type: 'object',
      properties: {
        n: { type: 'integer', description: 'N.', default: 2 },
        o: {
          type: 'object',
          properties: {
            k: { type: 'string', default: 'x' },
            l: { type: 'array', items: { type: 'integer' }, default: [1] },
          },
          required: ['k'],
          description: 'O.',
          default: null,
        },
        // A property named `default` is a property, not the keyword.
        default: { type: 'string', description: 'D.' },
      },
      required: ['default'],
    };
    const before = JSON.stringify(withDefaults);
    const out = sut(withDefaults);
    expect(out).toMatchObject({ strict: true, health: 'STRICT_COMPLIANT', reasons: [] });
    expect(out.json_schema).toEqual({
      type: 'object',
      properties: {
        n: { type: ['integer', 'null'], description: 'N.' },
        o: {
          anyOf: [
            {
              type: 'object',
              properties: {
                k: { type: 'string' },
                l: { anyOf: [{ type: 'array', items: { type: 'integer' } }, { type: 'null' }] },
              },
              required: ['k', 'l'],
              additionalProperties: false,
            },
            { type: 'null' },
          ],
          description: 'O.',
        },
        default: { type: 'string', description: 'D.' },
      },
      required: ['n', 'o', 'default'],
      additionalProperties: false,
    });
    expect(JSON.stringify(withDefaults)).toBe(before);
  });

  it('wraps an optional object property in anyOf with null, keeping its description outside', () => {
    const out = sut({
      type: 'object',
      properties: { o: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], description: 'O.' } },
      required: [],
    });
    expect(out.json_schema).toEqual({
      type: 'object',
      properties: {
        o: {
          anyOf: [
            { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false },
            { type: 'null' },
          ],
          description: 'O.',
        },
      },
      required: ['o'],
      additionalProperties: false,
    });
    expect(out.strict).toBe(true);
  });

  it('keeps the {type: "function", function} wrapper and converts inside $defs', () => {
    const out = sut({
      type: 'function',
      function: {
        name: 'f',
        parameters: {
          type: 'object',
          properties: { p: { $ref: '#/$defs/P' } },
          required: ['p'],
          $defs: { P: { type: 'object', properties: { v: { type: 'string' } } } },
        },
      },
    });
    expect(out.strict).toBe(true);
    expect(out.json_schema).toMatchObject({
      type: 'function',
      function: { strict: true, parameters: { $defs: { P: { required: ['v'], additionalProperties: false } } } },
    });
  });

  it.each([
    [
      'a free-form dict',
      {
        type: 'object',
        properties: { d: { type: 'object', additionalProperties: { type: 'integer' }, description: 'D.' } },
        required: ['d'],
      },
      "root.properties.d: 'additionalProperties' is not false",
    ],
    [
      'an untyped dict',
      { type: 'object', properties: { d: { type: 'object', description: 'D.' } }, required: ['d'] },
      "root.properties.d: 'additionalProperties' not explicitly set",
    ],
    [
      'a tuple',
      {
        type: 'object',
        properties: { t: { type: 'array', prefixItems: [{ type: 'string' }], items: { type: 'string' } } },
        required: ['t'],
      },
      "'prefixItems' is not supported",
    ],
    [
      'allOf',
      { type: 'object', properties: { a: { allOf: [{ type: 'string' }] } }, required: ['a'] },
      "'allOf' is not supported",
    ],
    ['Any', { type: 'object', properties: { a: { description: 'A.' } }, required: ['a'] }, "Missing 'type'"],
  ])('leaves %s non-strict, unchanged, with the reason', (_what, schema, reason) => {
    const out = sut(schema);
    expect(out.strict).toBe(false);
    expect(out.json_schema).toEqual(schema);
    expect(out.json_schema).not.toBe(schema);
    expect(out.reasons[0]).toMatch(/^not converted: /);
    expect(out.reasons.some((r) => r.includes(reason))).toBe(true);
    expect(out.health).not.toBe('STRICT_COMPLIANT');
  });

  it('returns INVALID input unconverted, and survives non-objects, cycles and deep nesting', () => {
    expect(sut({ type: 'string' })).toMatchObject({ strict: false, health: 'INVALID' });
    expect(sut(42)).toMatchObject({ strict: false, health: 'INVALID', json_schema: {} });
    const cyclic: Record<string, unknown> = { type: 'object', properties: {} };
    (cyclic.properties as Record<string, unknown>).self = cyclic;
    expect(sut(cyclic)).toMatchObject({ strict: false, health: 'INVALID' });
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 5000; i += 1) deep = { type: 'object', properties: { x: deep }, required: ['x'] };
    expect(sut(deep)).toMatchObject({ strict: false, health: 'INVALID' });
  });

  it('leaves an already strict schema as it is, adding only strict: true', () => {
    const strict = {
      name: 'f',
      description: 'F.',
      parameters: {
        type: 'object',
        properties: { a: { type: 'string' } },
        required: ['a'],
        additionalProperties: false,
      },
    };
    expect(sut(strict)).toEqual({
      json_schema: { ...strict, strict: true },
      strict: true,
      health: 'STRICT_COMPLIANT',
      reasons: [],
    });
  });
});
