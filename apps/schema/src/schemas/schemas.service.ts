import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import {
  ErrorCode,
  ToolplaneError,
  type ReplyOf,
  type RequestOf,
  type SchemasGenerate,
  type SchemasNormalize,
  type SchemasStrictify,
  type SchemasValidate,
} from '@toolplane/contracts';
import { APP_CONFIG } from '@toolplane/platform';
import { createSchemaEngine, SchemaGenerationError, type SchemaEngine } from '@toolplane/schema-engine';
import type { SchemaConfig } from '../schema.config';

@Injectable()
export class SchemasService implements OnModuleInit {
  private engine!: SchemaEngine;

  constructor(@Inject(APP_CONFIG) private readonly config: SchemaConfig) {}

  async onModuleInit(): Promise<void> {
    this.engine = await createSchemaEngine({
      maxSourceBytes: this.config.SCHEMA_MAX_SOURCE_BYTES,
      timeLimitMs: this.config.SCHEMA_TIME_LIMIT_MS,
    });
  }

  generate(req: RequestOf<typeof SchemasGenerate>): ReplyOf<typeof SchemasGenerate> {
    try {
      return this.engine.generate({
        source_code: req.source_code,
        source_type: req.source_type,
        name: req.name,
        ...(req.args_json_schema ? { args_json_schema: req.args_json_schema } : {}),
      });
    } catch (e) {
      if (e instanceof SchemaGenerationError) {
        throw new ToolplaneError(ErrorCode.SCHEMA_GENERATION_FAILED, e.message, {
          reason: e.reason,
          ...(e.functionName ? { function: e.functionName } : {}),
          ...(e.parameter ? { parameter: e.parameter } : {}),
          ...(e.line ? { line: e.line } : {}),
          ...(e.column ? { column: e.column } : {}),
        });
      }
      throw e;
    }
  }

  validate(jsonSchema: unknown): ReplyOf<typeof SchemasValidate> {
    return this.engine.validate(jsonSchema);
  }

  strictify(jsonSchema: Record<string, unknown>): ReplyOf<typeof SchemasStrictify> {
    return this.engine.toStrict(jsonSchema);
  }

  normalize(jsonSchema: Record<string, unknown>): ReplyOf<typeof SchemasNormalize> {
    return { ...this.engine.normalizeMcp(jsonSchema), original_json_schema: jsonSchema };
  }
}
