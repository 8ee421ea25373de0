import { Injectable, Logger } from '@nestjs/common';
import {
  ErrorCode,
  ToolplaneError,
  type ReplyOf,
  type RequestOf,
  type SecretMetadata,
  type SecretsDelete,
  type SecretsList,
  type SecretsSet,
} from '@toolplane/contracts';
import { aad, SecretBox } from '../crypto/secret-box';
import type { SecretEntity } from './secret.entity';
import { SecretsRepository, type SecretIdentity } from './secrets.repository';

/** A decrypted value and whether it is masked in tool output. */
export interface SecretValue {
  value: string;
  mask: boolean;
}

@Injectable()
export class SecretsService {
  private readonly log = new Logger(SecretsService.name);

  constructor(
    private readonly secrets: SecretsRepository,
    private readonly box: SecretBox,
  ) {}

  async set(req: RequestOf<typeof SecretsSet>): Promise<ReplyOf<typeof SecretsSet>> {
    const id = identity(req);
    const sealed = this.box.seal(req.value, aad.secret(id));
    const row = await this.secrets.upsert(id, {
      description: req.description ?? null,
      mask: req.mask,
      keyId: sealed.keyId,
      ciphertext: sealed.blob,
    });
    // An end user's id stays out of the log line (like the value): only that it is one user's.
    this.log.log(
      `set ${req.scope} secret ${req.key}${req.agent_id ? ` of agent ${req.agent_id}` : ''} in org ${req.org_id} (key ${sealed.keyId})`,
    );
    return { secret: toMetadata(row) };
  }

  async list(req: RequestOf<typeof SecretsList>): Promise<ReplyOf<typeof SecretsList>> {
    const rows = await this.secrets.list(req.org_id, { scope: req.scope, agentId: req.agent_id, userId: req.user_id });
    return { secrets: rows.map(toMetadata) };
  }

  async delete(req: RequestOf<typeof SecretsDelete>): Promise<ReplyOf<typeof SecretsDelete>> {
    if (!(await this.secrets.delete(identity(req)))) {
      throw new ToolplaneError(
        ErrorCode.SECRET_NOT_FOUND,
        `No ${req.scope} secret ${req.key} with these scope, agent, user and provider in this org`,
        { key: req.key },
      );
    }
    this.log.log(`deleted ${req.scope} secret ${req.key} in org ${req.org_id}`);
    return { deleted: true };
  }

  /** Decrypted sandbox-scope values for a provider; a provider-specific value beats a provider-less one. */
  async sandboxValues(
    orgId: string,
    provider: string,
  ): Promise<{ values: Map<string, SecretValue>; rows: SecretEntity[] }> {
    const rows = await this.secrets.sandboxFor(orgId, provider);
    return { values: this.open(rows), rows };
  }

  async agentValues(orgId: string, agentId: string, provider: string): Promise<Map<string, SecretValue>> {
    return this.open(await this.secrets.agentFor(orgId, agentId, provider));
  }

  /** One end user's decrypted values for a provider; a provider-specific value beats a provider-less one. */
  async userValues(orgId: string, userId: string, provider: string): Promise<Map<string, SecretValue>> {
    return this.open(await this.secrets.userFor(orgId, userId, provider));
  }

  /**
   * Decrypted provider-less values of these names for `{{VAR}}` templates, one map per owner: the
   * org's (scope sandbox, no agent), the agent's and the end user's (each only when named). Values
   * are never logged; the caller layers them (org-secrets, with the env's precedence).
   */
  async templateValues(
    orgId: string,
    names: string[],
    who: { agentId?: string; userId?: string },
  ): Promise<{ sandbox: Map<string, SecretValue>; agent: Map<string, SecretValue>; user: Map<string, SecretValue> }> {
    const rows = await this.secrets.templateValues(orgId, [...new Set(names)], who);
    return {
      sandbox: this.open(rows.filter((r) => r.scope === 'sandbox')),
      agent: this.open(rows.filter((r) => r.scope === 'agent')),
      user: this.open(rows.filter((r) => r.scope === 'user')),
    };
  }

  /** Sandbox-scope rows only (no decryption): what a sandbox config's fingerprint covers. */
  sandboxRows(orgId: string, provider: string): Promise<SecretEntity[]> {
    return this.secrets.sandboxFor(orgId, provider);
  }

  private open(rows: SecretEntity[]): Map<string, SecretValue> {
    const out = new Map<string, SecretValue>();
    // provider-less first, so a provider-specific row overwrites it
    for (const r of [...rows].sort((a, b) => a.provider.length - b.provider.length)) {
      const value = this.box.open({ keyId: r.keyId, blob: r.ciphertext }, aad.secret(r), `${r.scope} secret ${r.key}`);
      out.set(r.key, { value, mask: r.mask });
    }
    return out;
  }
}

function identity(req: {
  org_id: string;
  scope: SecretIdentity['scope'];
  agent_id?: string;
  user_id?: string;
  provider?: string;
  key: string;
}): SecretIdentity {
  return {
    orgId: req.org_id,
    scope: req.scope,
    agentId: req.agent_id ?? '',
    userId: req.user_id ?? '',
    provider: req.provider ?? '',
    key: req.key,
  };
}

export function toMetadata(r: SecretEntity): SecretMetadata {
  return {
    key: r.key,
    scope: r.scope,
    agent_id: r.agentId || null,
    user_id: r.userId || null,
    provider: (r.provider || null) as SecretMetadata['provider'],
    description: r.description,
    mask: r.mask,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}
