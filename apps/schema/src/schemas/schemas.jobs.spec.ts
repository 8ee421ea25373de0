import { MAX_ECHOED_SCHEMA_BYTES, SchemasNormalize } from '@toolplane/contracts';
import { createSchemaEngine, type SchemaEngine } from '@toolplane/schema-engine';
import { runSchemaJob as sut } from './schemas.jobs';

describe('runSchemaJob', () => {
  let engine: SchemaEngine;
  beforeAll(async () => {
    engine = await createSchemaEngine();
  });

  it('answers a generation error as data, with what the service puts in details', () => {
    const result = sut(
      engine,
      { op: 'generate', input: { source_code: 'def f(x):\n    """F."""\n' } },
      MAX_ECHOED_SCHEMA_BYTES,
    );
    expect(result).toEqual({
      failed: {
        reason: 'MISSING_ANNOTATION',
        message: "Parameter 'x' of function 'f' (line 1) has no type annotation",
        line: 1,
        column: 7,
        functionName: 'f',
        parameter: 'x',
      },
    });
    expect(
      sut(engine, { op: 'validate', json_schema: { type: 'object', properties: {} } }, MAX_ECHOED_SCHEMA_BYTES),
    ).toEqual({
      ok: expect.objectContaining({ health: expect.any(String) }),
    });
  });

  describe('normalize (issue 12: the reply carried a large input twice, past the 1 MiB bus limit)', () => {
    const schemaOfBytes = (bytes: number): Record<string, unknown> => {
      const base = { type: 'object', properties: { q: { type: 'string', description: '' } } };
      const pad = bytes - Buffer.byteLength(JSON.stringify(base));
      return { type: 'object', properties: { q: { type: 'string', description: 'd'.repeat(pad) } } };
    };

    it('echoes the input up to MAX_ECHOED_SCHEMA_BYTES of JSON', () => {
      const input = schemaOfBytes(MAX_ECHOED_SCHEMA_BYTES);
      const result = sut(engine, { op: 'normalize', json_schema: input }, MAX_ECHOED_SCHEMA_BYTES) as {
        ok: Record<string, unknown>;
      };
      expect(result.ok.original_json_schema).toBe(input);
      expect(result.ok.changes).not.toContainEqual(expect.stringContaining('original_json_schema'));
      expect(SchemasNormalize.reply.safeParse(result.ok).success).toBe(true);
    });

    it('leaves it out one byte past that, says so in changes, and keeps the reply valid', () => {
      const input = schemaOfBytes(MAX_ECHOED_SCHEMA_BYTES + 1);
      const result = sut(engine, { op: 'normalize', json_schema: input }, MAX_ECHOED_SCHEMA_BYTES) as {
        ok: Record<string, unknown>;
      };
      expect(result.ok).not.toHaveProperty('original_json_schema');
      expect(result.ok.changes).toContain(
        `original_json_schema left out: the input is more than ${MAX_ECHOED_SCHEMA_BYTES} bytes of JSON`,
      );
      expect(SchemasNormalize.reply.safeParse(result.ok).success).toBe(true);
      const big = sut(engine, { op: 'normalize', json_schema: schemaOfBytes(900 * 1024) }, MAX_ECHOED_SCHEMA_BYTES) as {
        ok: unknown;
      };
      expect(Buffer.byteLength(JSON.stringify(big.ok))).toBeLessThan(1024 * 1024);
    });
  });
});
