import { createSchemaEngine } from '../schema-engine';
import { SchemaGenerationError } from '../schema-generation.error';
import { SchemaEngine } from '../schema-engine.types';

/** Hostile input: every case must end quickly with a schema or a SchemaGenerationError. */
describe('python front-end: hostile input', () => {
  let sut: SchemaEngine;

  beforeAll(async () => {
    sut = await createSchemaEngine();
  });

  const reasonOf = (source_code: string): string => {
    try {
      sut.generate({ source_code });
      return 'OK';
    } catch (e) {
      if (e instanceof SchemaGenerationError) return e.reason;
      throw e;
    }
  };

  it('rejects a 1 MB source as too large', () => {
    const source = `def f():\n    """F."""\n${'# padding\n'.repeat(105_000)}`;
    expect(reasonOf(source)).toBe('SOURCE_TOO_LARGE');
  });

  it('survives deeply nested brackets in the body', () => {
    const source = `def f():\n    """F."""\n    return ${'['.repeat(50_000)}${']'.repeat(50_000)}\n`;
    expect(['OK', 'SYNTAX_ERROR', 'TIME_LIMIT_EXCEEDED']).toContain(reasonOf(source));
  });

  it('survives unbalanced brackets', () => {
    expect(reasonOf(`def f():\n    """F."""\n    return ${'(['.repeat(20_000)}\n`)).toBe('SYNTAX_ERROR');
  });

  it('refuses a deeply nested annotation instead of overflowing the stack', () => {
    const annotation = `${'list['.repeat(5_000)}int${']'.repeat(5_000)}`;
    expect(reasonOf(`def f(x: ${annotation}):\n    """F.\n\n    Args:\n        x: X.\n    """\n`)).toBe('UNSUPPORTED_ANNOTATION');
  });

  it('accepts a nested annotation within the depth limit', () => {
    const annotation = `${'list['.repeat(20)}int${']'.repeat(20)}`;
    expect(reasonOf(`def f(x: ${annotation}):\n    """F.\n\n    Args:\n        x: X.\n    """\n`)).toBe('OK');
  });

  it('handles 1000 parameters', () => {
    const names = Array.from({ length: 1000 }, (_, i) => `p${i}`);
    const source = `def wide(${names.map((n) => `${n}: int = 0`).join(', ')}):\n    """Wide.\n\n    Args:\n${names
      .map((n) => `        ${n}: Parameter ${n}.`)
      .join('\n')}\n    """\n`;
    const out = sut.generate({ source_code: source });
    expect(Object.keys(out.json_schema.parameters.properties)).toHaveLength(1000);
    expect(out.json_schema.parameters.properties.p999).toEqual({ type: 'integer', description: 'Parameter p999.', default: 0 });
  });

  it('handles odd unicode: identifiers, descriptions, surrogate pairs and bidi controls', () => {
    const source = 'def größe(länge: int, 名前: str = "\u202e"):\n    """Größe 📏 berechnen \u202e\u200b.\n\n    Args:\n        länge: Die Länge in 📐.\n        名前: 名前です。\n    """\n';
    const out = sut.generate({ source_code: source });
    expect(out.json_schema.name).toBe('größe');
    expect(out.json_schema.description).toBe('Größe 📏 berechnen \u202e\u200b.');
    expect(out.json_schema.parameters.properties['名前']).toEqual({ type: 'string', description: '名前です。', default: '\u202e' });
    // Non-ASCII names are valid Python but not valid OpenAI function names.
    expect(out.health).toBe('INVALID');
    expect(out.reasons[0]).toMatch(/^function\.name: must match/);
  });

  it('keeps a parameter named __proto__ as an ordinary property', () => {
    const out = sut.generate({ source_code: 'def f(__proto__: int):\n    """F.\n\n    Args:\n        __proto__: P.\n    """\n' });
    expect(Object.keys(out.json_schema.parameters.properties)).toEqual(['__proto__']);
    expect(JSON.parse(JSON.stringify(out.json_schema)).parameters.properties.__proto__).toEqual({ type: 'integer', description: 'P.' });
  });

  it('handles many top-level functions and a huge docstring', () => {
    const defs = Array.from({ length: 2000 }, (_, i) => `def f${i}():\n    """F${i}."""\n`).join('');
    expect(sut.generate({ source_code: defs }).json_schema.name).toBe('f1999');
    const doc = `def f():\n    """${'word '.repeat(40_000)}"""\n`;
    expect(sut.generate({ source_code: doc }).json_schema.description.length).toBeGreaterThan(100_000);
  });
});
