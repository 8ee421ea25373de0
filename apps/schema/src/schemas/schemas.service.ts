import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import {
  ErrorCode,
  MAX_DOCSTRING_BYTES,
  MAX_ECHOED_SCHEMA_BYTES,
  MAX_GENERATED_SCHEMA_BYTES,
  ToolplaneError,
  type ReplyOf,
  type RequestOf,
  type SchemasGenerate,
  type SchemasNormalize,
  type SchemasStrictify,
  type SchemasValidate,
  type Principal,
} from '@toolplane/contracts';
import { APP_CONFIG, FairQueue, HealthRegistry } from '@toolplane/platform';
import type { SchemaEngineOptions } from '@toolplane/schema-engine';
import { join } from 'node:path';
import type { SchemaConfig } from '../schema.config';
import type { SchemaFailure, SchemaJob, SchemaJobResult, SchemaWorkerData } from './schemas.jobs';
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
  /** Who gets a worker next: orgs in turn, none holding more than SCHEMA_WORKERS_PER_ORG. */
  private fair!: FairQueue;

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
      // Loaded before a worker is ready, not in its first TypeScript job: on a busy machine the
      // compiler's load alone can outlast the time limit, and the pool would end that job (and the
      // worker) every time.
      preloadTypeScript: true,
    };
    this.pool = new WorkerPool({
      script: join(__dirname, 'schemas.worker.js'),
      workerData: { engine, maxEchoedSchemaBytes: MAX_ECHOED_SCHEMA_BYTES } satisfies SchemaWorkerData,
      size: this.config.SCHEMA_WORKERS,
      timeLimitMs: this.config.SCHEMA_TIME_LIMIT_MS,
      maxQueue: this.config.SCHEMA_QUEUE_MAX,
      maxQueueWaitMs: this.config.SCHEMA_TIME_LIMIT_MS,
      resourceLimits: { maxOldGenerationSizeMb: this.config.SCHEMA_WORKER_MEMORY_MB },
      log: this.log,
    });
    await this.pool.start();
    this.fair = new FairQueue(
      this.config.SCHEMA_WORKERS,
      this.config.SCHEMA_WORKERS_PER_ORG ?? Math.max(1, this.config.SCHEMA_WORKERS - 1),
    );
    this.health.metrics = () => renderSchemaMetrics(this.pool.stats, this.fair.queued);
  }

  /** After the transport has drained its in-flight requests. */
  async onApplicationShutdown(): Promise<void> {
    await this.pool?.close();
  }

  async generate(org: string, req: RequestOf<typeof SchemasGenerate>): Promise<ReplyOf<typeof SchemasGenerate>> {
    const input = {
      source_code: req.source_code,
      source_type: req.source_type,
      name: req.name,
      ...(req.args_json_schema ? { args_json_schema: req.args_json_schema } : {}),
    };
    return (await this.run(org, { op: 'generate', input })) as ReplyOf<typeof SchemasGenerate>;
  }

  async validate(org: string, json_schema: Record<string, unknown>): Promise<ReplyOf<typeof SchemasValidate>> {
    return (await this.run(org, { op: 'validate', json_schema })) as ReplyOf<typeof SchemasValidate>;
  }

  async strictify(org: string, json_schema: Record<string, unknown>): Promise<ReplyOf<typeof SchemasStrictify>> {
    return (await this.run(org, { op: 'strictify', json_schema })) as ReplyOf<typeof SchemasStrictify>;
  }

  async normalize(org: string, json_schema: Record<string, unknown>): Promise<ReplyOf<typeof SchemasNormalize>> {
    return (await this.run(org, { op: 'normalize', json_schema })) as ReplyOf<typeof SchemasNormalize>;
  }

  /**
   * One job, once its org gets a worker (orgs in turn, at most SCHEMA_WORKERS_PER_ORG each): an
   * org sending pathological sources occupies at most its share, never every worker.
   */
  private async run(org: string, job: SchemaJob): Promise<unknown> {
    let result: SchemaJobResult;
    let release: (() => void) | undefined;
    try {
      if (this.fair.queued >= this.config.SCHEMA_QUEUE_MAX)
        throw new WorkerPoolError('busy', `${this.fair.queued} requests are waiting for a worker`);
      release = await this.fair.acquire(org, AbortSignal.timeout(this.config.SCHEMA_TIME_LIMIT_MS)).catch(() => {
        throw new WorkerPoolError('busy', `No worker was free within ${this.config.SCHEMA_TIME_LIMIT_MS} ms`);
      });
      result = (await this.pool.run(job)) as SchemaJobResult;
    } catch (e) {
      throw e instanceof WorkerPoolError ? this.poolFailure(e, job.op) : e;
    } finally {
      release?.();
    }
    if ('failed' in result) throw generationFailed(result.failed);
    return result.ok;
  }

  private poolFailure(e: WorkerPoolError, op: SchemaJob['op']): ToolplaneError | Error {
    const limitMs = this.config.SCHEMA_TIME_LIMIT_MS;
    switch (e.kind) {
      case 'timeout':
        return op === 'generate'
          ? generationFailed({
              reason: 'TIME_LIMIT_EXCEEDED',
              message: `Schema generation exceeded its time limit of ${limitMs} ms`,
            })
          : new ToolplaneError(ErrorCode.REQUEST_TIMEOUT, `schemas.${op} exceeded its time limit of ${limitMs} ms`, {
              limit_ms: limitMs,
            });
      case 'out_of_memory':
        return op === 'generate'
          ? generationFailed({
              reason: 'SCHEMA_TOO_LARGE',
              message: `Schema generation ${e.message.replace(/^The job /, '')}`,
            })
          : new ToolplaneError(ErrorCode.PAYLOAD_TOO_LARGE, `schemas.${op} ${e.message.replace(/^The job /, '')}`);
      case 'busy':
      case 'closed':
        return new ToolplaneError(
          ErrorCode.SERVICE_UNAVAILABLE,
          `The schema service cannot take the request now: ${e.message}`,
        );
      case 'crashed':
        return new Error(e.message); // a bug: INTERNAL
    }
  }
}

/** Whose turn a request takes: the tenant's org, or the org a service names for it, or the service. */
export function orgOf(caller: Principal, orgId: string | undefined): string {
  if (caller.kind === 'tenant') return caller.org;
  return orgId ?? (caller.kind === 'service' ? `service:${caller.app}` : 'operator');
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
