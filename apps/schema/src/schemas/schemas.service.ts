import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import {
  ErrorCode,
  MAX_DOCSTRING_BYTES,
  MAX_GENERATED_SCHEMA_BYTES,
  ToolplaneError,
  type ReplyOf,
  type RequestOf,
  type SchemasGenerate,
  type SchemasNormalize,
  type SchemasStrictify,
  type SchemasValidate,
} from '@toolplane/contracts';
import { APP_CONFIG, HealthRegistry } from '@toolplane/platform';
import type { SchemaEngineOptions } from '@toolplane/schema-engine';
import { join } from 'node:path';
import type { SchemaConfig } from '../schema.config';
import type { SchemaFailure, SchemaJob, SchemaJobResult } from './schemas.jobs';
import { renderSchemaMetrics } from './schemas.metrics';
import { WorkerPool, WorkerPoolError } from './worker-pool';

/**
 * The schema subjects. All engine work runs in a pool of worker threads (schemas.worker.ts),
 * each terminated and replaced when a job passes the time limit: a pathological source costs its
 * own request, and this thread keeps answering everyone else.
 */
@Injectable()
export class SchemasService implements OnModuleInit, OnApplicationShutdown {
  private readonly log = new Logger(SchemasService.name);
  private pool!: WorkerPool;

  constructor(
    @Inject(APP_CONFIG) private readonly config: SchemaConfig,
    private readonly health: HealthRegistry,
  ) {}

  async onModuleInit(): Promise<void> {
    const engine: SchemaEngineOptions = {
      maxSourceBytes: this.config.SCHEMA_MAX_SOURCE_BYTES,
      maxDocstringBytes: MAX_DOCSTRING_BYTES,
      maxSchemaBytes: MAX_GENERATED_SCHEMA_BYTES,
      // The pool ends a job at the limit itself (terminating its worker); the engine's own,
      // cooperative check is only a backstop here, so every overlong job ends the same way.
      timeLimitMs: 2 * this.config.SCHEMA_TIME_LIMIT_MS,
    };
    this.pool = new WorkerPool({
      script: join(__dirname, 'schemas.worker.js'),
      workerData: engine,
      size: this.config.SCHEMA_WORKERS,
      timeLimitMs: this.config.SCHEMA_TIME_LIMIT_MS,
      maxQueue: this.config.SCHEMA_QUEUE_MAX,
      maxQueueWaitMs: this.config.SCHEMA_TIME_LIMIT_MS,
      resourceLimits: { maxOldGenerationSizeMb: this.config.SCHEMA_WORKER_MEMORY_MB },
      log: this.log,
    });
    await this.pool.start();
    this.health.metrics = () => renderSchemaMetrics(this.pool.stats);
  }

  /** After the transport has drained its in-flight requests. */
  async onApplicationShutdown(): Promise<void> {
    await this.pool?.close();
  }

  async generate(req: RequestOf<typeof SchemasGenerate>): Promise<ReplyOf<typeof SchemasGenerate>> {
    const input = { source_code: req.source_code, source_type: req.source_type, name: req.name, ...(req.args_json_schema ? { args_json_schema: req.args_json_schema } : {}) };
    return (await this.run({ op: 'generate', input })) as ReplyOf<typeof SchemasGenerate>;
  }

  async validate(json_schema: Record<string, unknown>): Promise<ReplyOf<typeof SchemasValidate>> {
    return (await this.run({ op: 'validate', json_schema })) as ReplyOf<typeof SchemasValidate>;
  }

  async strictify(json_schema: Record<string, unknown>): Promise<ReplyOf<typeof SchemasStrictify>> {
    return (await this.run({ op: 'strictify', json_schema })) as ReplyOf<typeof SchemasStrictify>;
  }

  async normalize(json_schema: Record<string, unknown>): Promise<ReplyOf<typeof SchemasNormalize>> {
    return (await this.run({ op: 'normalize', json_schema })) as ReplyOf<typeof SchemasNormalize>;
  }

  private async run(job: SchemaJob): Promise<unknown> {
    let result: SchemaJobResult;
    try {
      result = (await this.pool.run(job)) as SchemaJobResult;
    } catch (e) {
      throw e instanceof WorkerPoolError ? this.poolFailure(e, job.op) : e;
    }
    if ('failed' in result) throw generationFailed(result.failed);
    return result.ok;
  }

  private poolFailure(e: WorkerPoolError, op: SchemaJob['op']): ToolplaneError | Error {
    const limitMs = this.config.SCHEMA_TIME_LIMIT_MS;
    switch (e.kind) {
      case 'timeout':
        return op === 'generate'
          ? generationFailed({ reason: 'TIME_LIMIT_EXCEEDED', message: `Schema generation exceeded its time limit of ${limitMs} ms` })
          : new ToolplaneError(ErrorCode.REQUEST_TIMEOUT, `schemas.${op} exceeded its time limit of ${limitMs} ms`, { limit_ms: limitMs });
      case 'out_of_memory':
        return op === 'generate'
          ? generationFailed({ reason: 'SCHEMA_TOO_LARGE', message: `Schema generation ${e.message.replace(/^The job /, '')}` })
          : new ToolplaneError(ErrorCode.PAYLOAD_TOO_LARGE, `schemas.${op} ${e.message.replace(/^The job /, '')}`);
      case 'busy':
      case 'closed':
        return new ToolplaneError(ErrorCode.SERVICE_UNAVAILABLE, `The schema service cannot take the request now: ${e.message}`);
      case 'crashed':
        return new Error(e.message); // a bug: INTERNAL
    }
  }
}

function generationFailed(f: SchemaFailure): ToolplaneError {
  return new ToolplaneError(ErrorCode.SCHEMA_GENERATION_FAILED, f.message, {
    reason: f.reason,
    ...(f.functionName ? { function: f.functionName } : {}),
    ...(f.parameter ? { parameter: f.parameter } : {}),
    ...(f.line ? { line: f.line } : {}),
    ...(f.column ? { column: f.column } : {}),
  });
}
