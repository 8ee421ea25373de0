import { Inject, Injectable, Logger } from '@nestjs/common';
import { SchemasStrictify, ToolplaneError, type SchemaHealth } from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import { createHash } from 'node:crypto';
import type { RegistryConfig } from '../registry.config';

export interface SchemaCheck {
  health: SchemaHealth;
  reasons: string[];
  /** The strict-mode conversion, or null when the schema cannot be strict (strictReasons say why). */
  strict: Record<string, unknown> | null;
  strictReasons: string[];
}

/** Checks sent to the schema service at once for one build. */
const CONCURRENCY = 8;

/**
 * A tool's parameters as the schema engine sees them — health, reasons and the strict-mode
 * conversion — from the schema service (`schemas.strictify`, one answer carries all three), kept
 * by content: a schema is checked once however many agents hold its tool, and again only when it
 * changes. The registry does not load the engine itself; it already asks the schema service for
 * schemas when it derives them.
 */
@Injectable()
export class SchemaChecksService {
  private readonly log = new Logger(SchemaChecksService.name);
  private readonly known = new Map<string, SchemaCheck>();

  constructor(
    private readonly messaging: MessagingClient,
    @Inject(APP_CONFIG) private readonly config: RegistryConfig,
  ) {}

  /** One check per schema, in order; `undefined` where the schema service could not answer (`failure` says why). */
  async checkAll(
    orgId: string,
    schemas: Array<Record<string, unknown>>,
  ): Promise<{ checks: Array<SchemaCheck | undefined>; failure?: string }> {
    const checks: Array<SchemaCheck | undefined> = new Array(schemas.length);
    const missing: Array<{ i: number; key: string }> = [];
    schemas.forEach((s, i) => {
      const key = contentKey(s);
      const hit = this.known.get(key);
      if (hit) checks[i] = hit;
      else missing.push({ i, key });
    });
    let failure: string | undefined;
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, missing.length) }, async () => {
        while (next < missing.length && failure === undefined) {
          const { i, key } = missing[next++]!;
          try {
            checks[i] = await this.check(orgId, schemas[i]!, key);
          } catch (e) {
            failure = e instanceof ToolplaneError ? `${e.code}: ${e.message}` : 'the schema service failed';
          }
        }
      }),
    );
    if (failure) this.log.warn(`schema checks for org ${orgId} failed: ${failure}`);
    return { checks, failure };
  }

  private async check(orgId: string, parameters: Record<string, unknown>, key: string): Promise<SchemaCheck> {
    const r = await this.messaging.request(
      SchemasStrictify,
      { org_id: orgId, json_schema: parameters },
      { timeoutMs: this.config.SCHEMA_REQUEST_TIMEOUT_MS },
    );
    // strict: the conversion passed (its health is the converted schema's); else health and reasons are the input's.
    const check: SchemaCheck = r.strict
      ? { health: 'STRICT_COMPLIANT', reasons: [], strict: r.json_schema, strictReasons: [] }
      : { health: r.health, reasons: r.reasons, strict: null, strictReasons: r.reasons };
    if (this.known.size >= this.config.REGISTRY_SCHEMA_CHECKS_MAX) this.known.clear();
    this.known.set(key, check);
    return check;
  }
}

function contentKey(schema: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(schema)).digest('base64url');
}
