import { createSchemaEngine } from '../schema-engine';
import { SchemaGenerationError } from '../schema-generation.error';
import type { SchemaEngine } from '../schema-engine.types';

describe('typescript front-end', () => {
  let sut: SchemaEngine;
  const gen = (source_code: string, name?: string) =>
    sut.generate({ source_code, source_type: 'typescript', ...(name ? { name } : {}) }).json_schema;
  const fail = (source_code: string, name?: string): SchemaGenerationError => {
    try {
      gen(source_code, name);
    } catch (e) {
      if (e instanceof SchemaGenerationError) return e;
      throw e;
    }
    throw new Error('expected a SchemaGenerationError');
  };

  beforeAll(async () => {
    sut = await createSchemaEngine();
  });

  it('describes an exported function: summary + long description, @param texts, required without defaults', () => {
    const source = `/**
 * Add two numbers.
 *
 * Works with negative numbers too.
 * @param a - The first number.
 * @param b The second number,
 *   over two lines.
 * @returns The sum.
 */
export function add(a: number, b: number = 2): number {
  return a + b;
}
`;
    expect(gen(source)).toEqual({
      name: 'add',
      description: 'Add two numbers.\n\nWorks with negative numbers too.',
      parameters: {
        type: 'object',
        properties: {
          a: { type: 'number', description: 'The first number.' },
          b: { type: 'number', description: 'The second number,\nover two lines.', default: 2 },
        },
        required: ['a'],
      },
    });
  });

  it('selects the last exported function, else the last function, else the named one', () => {
    const helpers = `/** H. */\nfunction helper(): void {}\n/** A. @param x x. */\nexport const a = (x: string) => x;\n/** B. */\nexport function b() {}\n/** C. */\nfunction c() {}\n`;
    expect(gen(helpers).name).toBe('b');
    expect(gen(helpers, 'helper').name).toBe('helper');
    expect(gen(helpers, 'a').parameters.properties).toEqual({ x: { type: 'string', description: 'x.' } });
    expect(gen(`/** One. */\nfunction one() {}\n/** Two. */\nfunction two() {}\n`).name).toBe('two');
    expect(gen(`/** One. */\nfunction one() {}\n/** Two. */\nfunction two() {}\nexport { one };\n`).name).toBe('one');
    expect(gen(`/** D. */\nexport default function dflt() {}\n/** Other. */\nfunction other() {}\n`).name).toBe('dflt');
  });

  it('maps primitives, arrays, tuples, any/unknown and object', () => {
    const source = `/**
 * Types.
 * @param s s. @param n n.
 * @param n n.
 * @param b b.
 * @param list list.
 * @param generic generic.
 * @param ro ro.
 * @param pair pair.
 * @param anything anything.
 * @param obj obj.
 * @param tpl tpl.
 */
export function t(s: string, n: number, b: boolean, list: string[], generic: Array<number>, ro: readonly boolean[], pair: [string, number], anything: unknown, obj: object, tpl: \`id-\${string}\`) {}
`;
    expect(gen(source).parameters.properties).toEqual({
      s: { type: 'string', description: 's.' },
      n: { type: 'number', description: 'n.' },
      b: { type: 'boolean', description: 'b.' },
      list: { type: 'array', items: { type: 'string' }, description: 'list.' },
      generic: { type: 'array', items: { type: 'number' }, description: 'generic.' },
      ro: { type: 'array', items: { type: 'boolean' }, description: 'ro.' },
      pair: {
        type: 'array',
        prefixItems: [{ type: 'string' }, { type: 'number' }],
        items: { type: ['string', 'number'] },
        minItems: 2,
        maxItems: 2,
        description: 'pair.',
      },
      anything: { description: 'anything.' },
      obj: { type: 'object', description: 'obj.' },
      tpl: { type: 'string', description: 'tpl.' },
    });
  });

  it('turns literal unions into enums with their JSON types, and unions into type lists or anyOf', () => {
    const source = `/**
 * Unions.
 * @param mode mode.
 * @param level level.
 * @param mixed mixed.
 * @param either either.
 * @param maybe maybe.
 * @param shape shape.
 */
export function u(mode: 'fast' | 'slow', level: 1 | 2 | -3, mixed: 'a' | 1.5 | true, either: string | number, maybe: string | null, shape: string[] | { k: string }) {}
`;
    expect(gen(source).parameters).toEqual({
      type: 'object',
      properties: {
        mode: { type: 'string', enum: ['fast', 'slow'], description: 'mode.' },
        level: { type: 'integer', enum: [1, 2, -3], description: 'level.' },
        mixed: { type: ['string', 'number', 'boolean'], enum: ['a', 1.5, true], description: 'mixed.' },
        either: { type: ['string', 'number'], description: 'either.' },
        maybe: { type: ['string', 'null'], description: 'maybe.' },
        shape: {
          anyOf: [
            { type: 'array', items: { type: 'string' } },
            { type: 'object', properties: { k: { type: 'string' } }, required: ['k'] },
          ],
          description: 'shape.',
        },
      },
      required: ['mode', 'level', 'mixed', 'either', 'maybe', 'shape'],
    });
  });

  it('treats optional, defaulted and `| undefined` parameters as not required; infers types from literal defaults', () => {
    const source = `/**
 * Optional.
 * @param a a.
 * @param b b.
 * @param c c.
 * @param d d.
 * @param e e.
 */
export const f = (a?: string, b: string | undefined, c = 3, d = 'x', e: number | null = null) => 0;
`;
    expect(gen(source).parameters).toEqual({
      type: 'object',
      properties: {
        a: { type: 'string', description: 'a.' },
        b: { type: 'string', description: 'b.' },
        c: { type: 'number', description: 'c.', default: 3 },
        d: { type: 'string', description: 'd.', default: 'x' },
        e: { type: 'number', description: 'e.', default: null },
      },
      required: [],
    });
  });

  it('gives literal defaults a `default` and leaves the others without one', () => {
    const source = `enum E { A = 'a', B = 'b' }
/**
 * Defaults.
 * @param a a.
 * @param b b.
 * @param c c.
 * @param d d.
 * @param e e.
 * @param f f.
 * @param g g.
 */
export function f(
  a: string[] = ['x'] as const,
  b: E = E['B'],
  c: Record<string, number> = { ['k']: 1 },
  d: Record<string, number> = { __proto__: 1 },
  e: string = -'1' as unknown as string,
  f: number = +(2),
  g: Record<string, unknown> = { x: { y: [null, true] } },
) {}
`;
    const props = gen(source).parameters.properties;
    expect(props.a.default).toEqual(['x']);
    expect(props.b.default).toBe('b');
    expect('default' in props.c).toBe(false); // computed key
    expect('default' in props.d).toBe(false); // __proto__ sets the prototype
    expect('default' in props.e).toBe(false); // a coercion, not a literal
    expect(props.f.default).toBe(2);
    expect(props.g.default).toEqual({ x: { y: [null, true] } });
    expect(Object.keys(props.g)).toEqual(['type', 'description', 'default']);
  });

  it('inlines interfaces (with extends and JSDoc on members), type aliases, enums and Record<string, V>', () => {
    const source = `
/** Where a thing is. */
interface Base {
  /** Latitude. */ lat: number;
}
interface Place extends Base {
  /** Longitude. */
  lon: number;
  /** Optional label. */
  label?: string;
}
type Places = Place[];
enum Unit { Metric = 'metric', Imperial = 'imperial' }
enum Level { Low, Mid = 5, High }
/**
 * Plan a trip.
 * @param stops The stops.
 * @param unit Units.
 * @param level Level.
 * @param scores Scores by name.
 * @param first The first stop.
 */
export async function plan(stops: Places, unit: Unit, level: Level, scores: Record<string, number>, first: Place | null): Promise<string> { return ''; }
`;
    const place = {
      type: 'object',
      properties: {
        lat: { type: 'number', description: 'Latitude.' },
        lon: { type: 'number', description: 'Longitude.' },
        label: { type: 'string', description: 'Optional label.' },
      },
      required: ['lat', 'lon'],
    };
    expect(gen(source).parameters.properties).toEqual({
      stops: { type: 'array', items: place, description: 'The stops.' },
      unit: { type: 'string', enum: ['metric', 'imperial'], description: 'Units.' },
      level: { type: 'integer', enum: [0, 5, 6], description: 'Level.' },
      scores: { type: 'object', additionalProperties: { type: 'number' }, description: 'Scores by name.' },
      first: { anyOf: [place, { type: 'null' }], description: 'The first stop.' },
    });
  });

  it('handles Record with literal keys, intersections, Partial, Set, enum members and index-signature maps', () => {
    const source = `
enum Kind { A = 'a', B = 'b' }
type Named = { name: string };
/**
 * Misc.
 * @param byDay by day.
 * @param both both.
 * @param patch patch.
 * @param unique unique.
 * @param kind kind.
 * @param dict dict.
 */
export function m(byDay: Record<'mon' | 'tue', boolean>, both: Named & { age: number }, patch: Partial<Named>, unique: Set<string>, kind: Kind.B, dict: { [key: string]: string }) {}
`;
    expect(gen(source).parameters.properties).toEqual({
      byDay: {
        type: 'object',
        properties: { mon: { type: 'boolean' }, tue: { type: 'boolean' } },
        required: ['mon', 'tue'],
        description: 'by day.',
      },
      both: {
        type: 'object',
        properties: { name: { type: 'string' }, age: { type: 'number' } },
        required: ['name', 'age'],
        description: 'both.',
      },
      patch: { type: 'object', properties: { name: { type: 'string' } }, required: [], description: 'patch.' },
      unique: { type: 'array', items: { type: 'string' }, uniqueItems: true, description: 'unique.' },
      kind: { type: 'string', enum: ['b'], description: 'kind.' },
      dict: { type: 'object', additionalProperties: { type: 'string' }, description: 'dict.' },
    });
  });

  it('skips rest parameters, `this` and agent_state', () => {
    const source = `/**
 * Skip.
 * @param q q.
 */
export function s(this: unknown, q: string, agent_state: unknown, ...rest: string[]) {}
`;
    expect(Object.keys(gen(source).parameters.properties)).toEqual(['q']);
  });

  it('uses "No description available" when the JSDoc has only tags', () => {
    expect(gen(`/** @param x The x. */\nexport function f(x: string) {}\n`).description).toBe(
      'No description available',
    );
  });

  it('reports syntax errors with line and column', () => {
    const e = fail('/** Doc. */\nexport function f(a: string {\n}\n');
    expect(e).toMatchObject({ reason: 'SYNTAX_ERROR', line: 2, column: 29 });
    expect(e.message).toBe("TypeScript syntax error at line 2, column 29: ',' expected.");
  });

  it('reports no function and a missing named function', () => {
    expect(fail('const x = 1;\ninterface A { a: string }\n')).toMatchObject({ reason: 'NO_FUNCTION' });
    const e = fail('/** A. */\nexport function a() {}\n', 'b');
    expect(e).toMatchObject({ reason: 'FUNCTION_NOT_FOUND', functionName: 'b' });
    expect(e.message).toContain('(found: a)');
  });

  it('reports a missing JSDoc, an undocumented parameter and a missing annotation, naming function, parameter and line', () => {
    expect(fail('\nexport function f(a: string) {}\n')).toMatchObject({
      reason: 'MISSING_DOCSTRING',
      functionName: 'f',
      line: 2,
    });
    const undocumented = fail('/**\n * F.\n * @param a A.\n */\nexport function f(a: string,\n  b: number) {}\n');
    expect(undocumented).toMatchObject({
      reason: 'UNDOCUMENTED_PARAMETER',
      functionName: 'f',
      parameter: 'b',
      line: 6,
      column: 3,
    });
    expect(undocumented.message).toBe(
      "Parameter 'b' of function 'f' (line 6) is not documented: add '@param b <description>' to the function's JSDoc",
    );
    expect(fail('/** F.\n @param a A. */\nexport function f(a) {}\n')).toMatchObject({
      reason: 'MISSING_ANNOTATION',
      parameter: 'a',
      line: 3,
    });
  });

  it.each([
    ['Date', 'a: Date', "type 'Date' is not supported or not declared in the source (JSON has no dates: use string)"],
    ['imported types', 'a: Imported', "type 'Imported' is not supported or not declared in the source"],
    ['function types', 'a: () => void', "type '() => void' is not supported"],
    ['generic local types', 'a: Box<string>', "generic type 'Box<string>' is not supported"],
    ['recursive types', 'a: Tree', "recursive type 'Tree' cannot be inlined"],
    ['keyof', 'a: keyof Tree', "type 'keyof Tree' is not supported"],
    ['bigint', 'a: bigint', "type 'bigint' is not supported"],
    ['destructuring', '{ a }: { a: string }', 'A destructured parameter'],
  ])('rejects %s as UNSUPPORTED_ANNOTATION', (_what, param, message) => {
    const source = `interface Box<T> { v: T }\ninterface Tree { kids: Tree[] }\n/**\n * F.\n * @param a A.\n */\nexport function f(${param}) {}\n`;
    const e = fail(source);
    expect(e.reason).toBe('UNSUPPORTED_ANNOTATION');
    expect(e.message).toContain(message);
    expect(e.line).toBeGreaterThanOrEqual(2);
  });

  it('passes through upsert-style input: source_type typescript validates like any schema', () => {
    const out = sut.generate({ source_code: '/** Ping. */\nexport function ping() {}\n', source_type: 'typescript' });
    expect(out.health).toBe('NON_STRICT_ONLY');
    expect(out.reasons).toEqual(["root: 'additionalProperties' not explicitly set"]);
  });
});
