import { createSchemaEngine } from '../schema-engine';
import { SchemaGenerationError } from '../schema-generation.error';
import type { SchemaEngine } from '../schema-engine.types';

/** Hostile TypeScript input: every case must end quickly with a schema or a SchemaGenerationError. */
describe('typescript front-end: hostile input', () => {
  let sut: SchemaEngine;

  beforeAll(async () => {
    sut = await createSchemaEngine({ timeLimitMs: 2000 });
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
    expect(reasonOf(`/**\n * F.\n * @param x X.\n */\nexport function f(x: ${type}) {}\n`)).toMatch(/^(UNSUPPORTED_ANNOTATION|SYNTAX_ERROR)$/);
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
    expect(out.json_schema.parameters.properties.p999).toEqual({ type: 'number', description: 'Parameter p999.', default: 0 });
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
    const rand = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const alphabet = '/**/@param x: string | number[]{}()<>;=\'"`\\\n\t export function interface type enum 名 \u0000';
    for (let i = 0; i < 200; i += 1) {
      const source = Array.from({ length: 200 }, () => alphabet[Math.floor(rand() * alphabet.length)]).join('');
      expect(['OK', 'SYNTAX_ERROR', 'NO_FUNCTION', 'MISSING_DOCSTRING', 'UNDOCUMENTED_PARAMETER', 'MISSING_ANNOTATION', 'UNSUPPORTED_ANNOTATION']).toContain(reasonOf(source));
    }
  });

  it('rejects an unknown source type', () => {
    expect(() => sut.generate({ source_code: 'x', source_type: 'ruby' as never })).toThrow(expect.objectContaining({ reason: 'UNSUPPORTED_SOURCE_TYPE' }));
  });
});
