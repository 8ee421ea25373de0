import { Injectable, Logger } from '@nestjs/common';
import {
  ErrorCode,
  ToolplaneError,
  type ReplyOf,
  type RequestOf,
  type Provider,
  type SandboxConfig,
  type SandboxConfigsGet,
  type SandboxConfigsList,
  type SandboxConfigsUpsert,
} from '@toolplane/contracts';
import { CredentialsCache } from '../cache/credentials-cache';
import { SecretsService } from '../secrets/secrets.service';
import type { SandboxConfigEntity } from './sandbox-config.entity';
import { SandboxConfigsRepository } from './sandbox-configs.repository';
import { sandboxFingerprint } from './fingerprint';

@Injectable()
export class SandboxConfigsService {
  private readonly log = new Logger(SandboxConfigsService.name);

  constructor(
    private readonly configs: SandboxConfigsRepository,
    private readonly secrets: SecretsService,
    private readonly cache: CredentialsCache,
  ) {}

  async upsert(req: RequestOf<typeof SandboxConfigsUpsert>): Promise<ReplyOf<typeof SandboxConfigsUpsert>> {
    // One default per org: marking this one clears the mark on the others, in the same transaction.
    const row = await this.configs.upsert(req.org_id, req.provider, req.config, req.config.default === true);
    this.cache.invalidate(req.org_id);
    this.log.log(`upserted ${req.provider} sandbox config of org ${req.org_id}`);
    return { sandbox_config: await this.toWire(row) };
  }

  async get(req: RequestOf<typeof SandboxConfigsGet>): Promise<ReplyOf<typeof SandboxConfigsGet>> {
    const row = await this.configs.find(req.org_id, req.provider);
    if (!row)
      throw new ToolplaneError(ErrorCode.SANDBOX_CONFIG_NOT_FOUND, `No ${req.provider} sandbox config in this org`, {
        provider: req.provider,
      });
    return { sandbox_config: await this.toWire(row) };
  }

  async list(req: RequestOf<typeof SandboxConfigsList>): Promise<ReplyOf<typeof SandboxConfigsList>> {
    const rows = await this.configs.list(req.org_id);
    return { sandbox_configs: await Promise.all(rows.map((r) => this.toWire(r))) };
  }

  /** The provider of the org's config marked `default`, else local. Cached with the org's other stored state. */
  defaultProvider(orgId: string): Promise<Provider> {
    return this.cache.get(orgId, 'default-provider', async () => {
      const marked = (await this.configs.list(orgId)).find(
        (r) => (r.config as SandboxConfig['config']).default === true,
      );
      return (marked?.provider as Provider | undefined) ?? 'local';
    });
  }

  /**
   * The org's settings for a provider and their fingerprint (over the settings and the env vars'
   * keys and versions); the fingerprint is null when there are neither settings nor env vars.
   */
  async resolvedFor(
    orgId: string,
    provider: string,
    envRows?: Array<{ key: string; provider: string; updatedAt: Date }>,
  ): Promise<{ fingerprint: string | null; settings: SandboxConfig['config'] | null }> {
    const [row, env] = await Promise.all([
      this.configs.find(orgId, provider),
      envRows ?? this.secrets.sandboxRows(orgId, provider),
    ]);
    const settings = (row?.config as SandboxConfig['config'] | undefined) ?? null;
    if (!row && env.length === 0) return { fingerprint: null, settings };
    return { fingerprint: sandboxFingerprint(provider, row?.config ?? null, env), settings };
  }

  private async toWire(row: SandboxConfigEntity): Promise<SandboxConfig> {
    const env = await this.secrets.sandboxRows(row.orgId, row.provider);
    return {
      provider: row.provider as SandboxConfig['provider'],
      config: row.config as SandboxConfig['config'],
      fingerprint: sandboxFingerprint(row.provider, row.config, env),
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString(),
    };
  }
}
