import { createSchemaEngine } from '../schema-engine';
import { SchemaGenerationError } from '../schema-generation.error';
import type { SchemaEngine } from '../schema-engine.types';

/** Hostile TypeScript input: every case must end quickly with a schema or a SchemaGenerationError. */
describe('typescript front-end: hostile input', () => {
  let sut: SchemaEngine;

  beforeAll(async () => {
    sut = await createSchemaEngine({ timeLimitMs: 600_000 }); // time is not what these tests measure
  });

  const reasonOf = (source_code: string, name?: string): string => {
    try {
      sut.generate({ source_code, source_type: 'typescript', ...(name ? { name } : {}) });
      return 'OK';
    } catch (e) {
      if (e instanceof SchemaGenerationError) return e.reason;
      throw e;
    }
  };
  it('rejects a 1 MB source as too large before parsing it', () => {
    expect(reasonOf(`/** F. */\nexport function f() {}\n${'// padding\n'.repeat(100_000)}`)).toBe('SOURCE_TOO_LARGE');
  });

  it('survives deeply nested expressions in the body (a stack overflow becomes a syntax error)', () => {
    const source = `/** F. */\nexport function f() { return ${'['.repeat(60_000)}${']'.repeat(60_000)}; }\n`;
    expect(['OK', 'SYNTAX_ERROR']).toContain(reasonOf(source));
  });

  it('survives unbalanced brackets and unterminated comments and strings', () => {
    expect(reasonOf(`/** F. */\nexport function f() { return ${'({['.repeat(20_000)} }\n`)).toBe('SYNTAX_ERROR');
    expect(reasonOf('/** F.\nexport function f() {}\n')).toBe('SYNTAX_ERROR');
    expect(reasonOf("/** F. */\nexport function f() { return 'abc }\n")).toBe('SYNTAX_ERROR');
  });

  it('refuses a deeply nested parameter type instead of overflowing the stack', () => {
    const type = `${'Array<'.repeat(3_000)}string${'>'.repeat(3_000)}`;
    expect(reasonOf(`/**\n * F.\n * @param x X.\n */\nexport function f(x: ${type}) {}\n`)).toMatch(
      /^(UNSUPPORTED_ANNOTATION|SYNTAX_ERROR)$/,
    );
  });

  it('refuses mutually recursive aliases and interfaces', () => {
    const source = `type A = { b: B };\ntype B = { a: A };\ninterface C extends C {}\n/**\n * F.\n * @param x X.\n */\nexport function f(x: A) {}\n/**\n * G.\n * @param y Y.\n */\nexport function g(y: C) {}\n`;
    expect(reasonOf(source, 'f')).toBe('UNSUPPORTED_ANNOTATION');
    expect(reasonOf(source, 'g')).toBe('UNSUPPORTED_ANNOTATION');
  });

  it('handles 1000 parameters', () => {
    const names = Array.from({ length: 1000 }, (_, i) => `p${i}`);
    const source = `/**\n * Wide.\n${names.map((n) => ` * @param ${n} Parameter ${n}.`).join('\n')}\n */\nexport function wide(${names.map((n) => `${n}: number = 0`).join(', ')}) {}\n`;
    const out = sut.generate({ source_code: source, source_type: 'typescript' });
    expect(Object.keys(out.json_schema.parameters.properties)).toHaveLength(1000);
    expect(out.json_schema.parameters.properties.p999).toEqual({
      type: 'number',
      description: 'Parameter p999.',
      default: 0,
    });
  });

  it('handles odd unicode: identifiers, property names, emoji and bidi controls', () => {
    const source = `interface Größe {\n  /** 名前です。 */\n  '名前': string;\n  '__proto__': number;\n}\n/**\n * Größe 📏 berechnen \u202e\u200b.\n * @param länge Die Länge in 📐.\n */\nexport function größe(länge: Größe) {}\n`;
    const out = sut.generate({ source_code: source, source_type: 'typescript' });
    expect(out.json_schema.name).toBe('größe');
    expect(out.json_schema.description).toBe('Größe 📏 berechnen \u202e\u200b.');
    const props = out.json_schema.parameters.properties.länge!.properties as Record<string, unknown>;
    expect(Object.keys(props)).toEqual(['名前', '__proto__']);
    expect(Object.getPrototypeOf(props)).toBe(Object.prototype);
    expect(out.health).toBe('INVALID'); // the name is not ^[a-zA-Z0-9_-]{1,64}$
  });

  it('ignores decorators, classes, namespaces and nested functions beside the tool', () => {
    const source = `namespace N { export function inner() {} }\nclass K { @dec m(): void {} }\n/**\n * Tool.\n * @param x X.\n */\nexport function tool(x: string) {\n  /** Nested. */\n  function nested(y: number) {}\n  return x;\n}\n`;
    expect(sut.generate({ source_code: source, source_type: 'typescript' }).json_schema.name).toBe('tool');
  });

  it('never crashes on random byte soup', () => {
    let seed = 42;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const alphabet = '/**/@param x: string | number[]{}()<>;=\'"`\\\n\t export function interface type enum 名 \u0000';
    for (let i = 0; i < 200; i += 1) {
      const source = Array.from({ length: 200 }, () => alphabet[Math.floor(rand() * alphabet.length)]).join('');
      expect([
        'OK',
        'SYNTAX_ERROR',
        'NO_FUNCTION',
        'MISSING_DOCSTRING',
        'UNDOCUMENTED_PARAMETER',
        'MISSING_ANNOTATION',
        'UNSUPPORTED_ANNOTATION',
      ]).toContain(reasonOf(source));
    }
  });

  // Issue 12. Each source below took seconds or more before (quadratic or exponential work);
  // sizes are bounded by the contract's limits, and no duration is asserted.
  describe('issue 12: work linear in the source', () => {
    const failure = (source_code: string): SchemaGenerationError => {
      try {
        sut.generate({ source_code, source_type: 'typescript' });
      } catch (e) {
        if (e instanceof SchemaGenerationError) return e;
        throw e;
      }
      throw new Error('expected a SchemaGenerationError');
    };
    const tool = (type: string, extra = ''): string =>
      `${extra}/**\n * F.\n * @param x X.\n */\nexport function f(x: ${type}) {}\n`;

    it('reads each enum once however often its members are used', () => {
      const members = Array.from({ length: 8000 }, (_, i) => `M${i}`).join(', ');
      const uses = Array.from({ length: 8000 }, (_, i) => `E.M${7999 - i}`).join(', ');
      const out = sut.generate({
        source_code: tool(uses.replaceAll(', ', ' | '), `enum E { ${members} }\n`),
        source_type: 'typescript',
      });
      const values = (out.json_schema.parameters.properties.x as { enum: number[] }).enum;
      expect(values).toHaveLength(8000);
      expect([values[0], values[7999]]).toEqual([7999, 0]);
      const defaults = `enum E { ${members} }\n/**\n * F.\n * @param x X.\n */\nexport function f(x: number[] = [${uses}]) {}\n`;
      const x = sut.generate({ source_code: defaults, source_type: 'typescript' }).json_schema.parameters.properties
        .x as { default: number[] };
      expect(x.default.slice(0, 2)).toEqual([7999, 7998]);
    });

    it('merges long unions, many fields and many declarations of one interface', () => {
      const literals = Array.from({ length: 20_000 }, (_, i) => `'v${i % 15_000}'`).join(' | ');
      expect(
        (
          sut.generate({ source_code: tool(literals), source_type: 'typescript' }).json_schema.parameters.properties
            .x as { enum: string[] }
        ).enum,
      ).toHaveLength(15_000);
      const fields = Array.from({ length: 10_000 }, (_, i) => `p${i % 8000}: string;`).join(' ');
      const wide = sut.generate({ source_code: tool('A', `interface A { ${fields} }\n`), source_type: 'typescript' });
      expect(Object.keys((wide.json_schema.parameters.properties.x as { properties: object }).properties)).toHaveLength(
        8000,
      );
      const merged = sut.generate({
        source_code: tool('A', 'interface A { a: string }\n'.repeat(8000)),
        source_type: 'typescript',
      });
      expect((merged.json_schema.parameters.properties.x as { required: string[] }).required).toEqual(['a']);
    });

    it('resolves each declared type once, and refuses the exponentially large schema aliases of aliases describe', () => {
      const aliases = Array.from({ length: 30 }, (_, i) => `type T${i + 1} = [T${i}, T${i}];`).join('\n');
      expect(failure(tool('T15', `type T0 = string;\n${aliases}\n`))).toMatchObject({
        reason: 'SCHEMA_TOO_LARGE',
        message: expect.stringMatching(/^The generated schema would be larger than 524288 bytes/),
      });
      const unions = Array.from({ length: 30 }, (_, i) => `type U${i + 1} = U${i} | U${i} | U${i};`).join('\n');
      expect(
        sut.generate({ source_code: tool('U15', `type U0 = string;\n${unions}\n`), source_type: 'typescript' })
          .json_schema.parameters.properties.x,
      ).toEqual({ type: 'string', description: 'X.' });
      expect(failure(tool(`${'['.repeat(30)}string${']'.repeat(30)}`)).reason).toBe('SCHEMA_TOO_LARGE');
    });

    it('bounds what a long chain of extended interfaces copies', () => {
      const chain = Array.from(
        { length: 3000 },
        (_, i) => `interface I${i + 1} extends I${i} { a${i + 1}: string }`,
      ).join('\n');
      const params = Array.from({ length: 3000 }, (_, i) => `x${i + 1}: I${i + 1}`).join(', ');
      const docs = Array.from({ length: 3000 }, (_, i) => ` * @param x${i + 1} X.`).join('\n');
      const source = `interface I0 { a0: string }\n${chain}\n/**\n * F.\n${docs}\n */\nexport function f(${params}) {}\n`;
      expect(failure(source)).toMatchObject({ reason: 'SCHEMA_TOO_LARGE' });
      const short = sut.generate({
        source_code: source.replace(/export function f\(.*\) \{\}/, 'export function f(x2: I2) {}'),
        source_type: 'typescript',
      });
      expect((short.json_schema.parameters.properties.x2 as { required: string[] }).required).toEqual([
        'a0',
        'a1',
        'a2',
      ]);
    });

    it('rejects a JSDoc comment over the docstring limit, naming where it is', () => {
      expect(failure(`/**\n * ${'word '.repeat(14_000)}\n */\nexport function f() {}\n`)).toMatchObject({
        reason: 'SOURCE_TOO_LARGE',
        line: 1,
        message: expect.stringMatching(
          /^The docstring of function 'f' \(line 1\) is 700\d\d bytes; the limit is 65536 bytes$/,
        ),
      });
      const member = `interface A {\n  /** ${'m'.repeat(70_000)} */\n  a: string;\n}\n`;
      expect(failure(tool('A', member))).toMatchObject({
        reason: 'SOURCE_TOO_LARGE',
        line: 2,
        message: expect.stringContaining("docstring of member 'a' (line 2)"),
      });
      expect(
        sut.generate({
          source_code: `/**\n * ${'word '.repeat(13_000)}\n */\nexport function f() {}\n`,
          source_type: 'typescript',
        }).json_schema.description,
      ).toHaveLength(64_999);
    });
  });

  it('rejects an unknown source type', () => {
    expect(() => sut.generate({ source_code: 'x', source_type: 'ruby' as never })).toThrow(
      expect.objectContaining({ reason: 'UNSUPPORTED_SOURCE_TYPE' }),
    );
  });
});
