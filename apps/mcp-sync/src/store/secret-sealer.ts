import { Inject, Injectable } from '@nestjs/common';
import {
  ErrorCode,
  SealedValuesOpen,
  SealedValuesSeal,
  ToolplaneError,
  type McpAuthInput,
  type SealPurpose,
} from '@toolplane/contracts';
import { MessagingClient } from '@toolplane/messaging';
import { APP_CONFIG } from '@toolplane/platform';
import { openAead } from '@toolplane/crypto';
import { createSecretKey, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { OAuthState } from './oauth-state';
import type { McpSyncConfig } from '../mcp-sync.config';

/** What a server keeps sealed: every value that may carry a secret (templates included). */
export interface ServerSecrets {
  env?: Record<string, string>;
  headers?: Record<string, string>;
  auth?: McpAuthInput;
  /** What OAuth discovery and registration found (see OAuthState). */
  oauth?: OAuthState;
}

/** What a sealed value belongs to: its purpose, org and reference (server id, authorization state). */
export interface SealRef {
  orgId: string;
  purpose: SealPurpose;
  ref: string;
}

/** Blobs sealed under the credentials key ring: magic | u16 key id length | key id | the credentials envelope. */
const MAGIC = Buffer.from('TPK1');

/**
 * mcp-sync's secrets (a server's headers, env, auth and what OAuth learned; a pending
 * authorization) sealed under the one key ring of Toolplane: the credentials service seals and
 * opens them (SealedValuesSeal/Open, inside service seals on the bus) and mcp-sync stores the
 * blobs. A blob is bound to its purpose, org and reference: copied to another row it does not open.
 *
 * Rows sealed before (with MCP_ENCRYPTION_KEY, or the development key file) still open with that
 * key when it is configured, and are reported `stale`; so is a blob under a key that is no longer
 * the ring's active one: the owner seals it again (migration and rotation, see TargetBuilder).
 */
@Injectable()
export class SecretSealer {
  private readonly legacy?: KeyObject;
  private readonly timeoutMs: number;

  constructor(
    @Inject(APP_CONFIG) config: McpSyncConfig,
    private readonly messaging: MessagingClient,
  ) {
    this.timeoutMs = config.CREDENTIALS_REQUEST_TIMEOUT_MS;
    const key = legacyKey(config);
    if (key) this.legacy = createSecretKey(key);
  }

  async seal(value: object, ref: SealRef): Promise<Buffer> {
    const r = await this.messaging.request(
      SealedValuesSeal,
      { ...wire(ref), plaintext: JSON.stringify(value) },
      this.opts(),
    );
    const id = Buffer.from(r.key_id, 'utf8');
    const len = Buffer.alloc(2);
    len.writeUInt16BE(id.length);
    return Buffer.concat([MAGIC, len, id, Buffer.from(r.blob, 'base64')]);
  }

  /** The value (empty when nothing is stored), and whether it should be sealed again (an old key, or the legacy one). */
  async open<T extends object = ServerSecrets>(
    blob: Buffer | null,
    ref: SealRef,
  ): Promise<{ value: Partial<T>; stale: boolean }> {
    if (!blob) return { value: {}, stale: false };
    if (blob.subarray(0, MAGIC.length).equals(MAGIC)) {
      const len = blob.readUInt16BE(MAGIC.length);
      const keyId = blob.subarray(MAGIC.length + 2, MAGIC.length + 2 + len).toString('utf8');
      const sealed = blob.subarray(MAGIC.length + 2 + len).toString('base64');
      const r = await this.messaging.request(
        SealedValuesOpen,
        { ...wire(ref), key_id: keyId, blob: sealed },
        this.opts(),
      );
      return { value: JSON.parse(r.plaintext) as T, stale: r.stale };
    }
    if (!this.legacy) {
      throw new ToolplaneError(
        ErrorCode.ENCRYPTION_KEY_MISSING,
        'These secrets were sealed with MCP_ENCRYPTION_KEY, which is not configured here: set it (they are then sealed again under the credentials key ring) or update the server',
        undefined,
        false,
      );
    }
    try {
      return { value: JSON.parse(openAead(this.legacy, blob, legacyAad(ref)).toString('utf8')) as T, stale: true };
    } catch {
      throw new ToolplaneError(
        ErrorCode.ENCRYPTION_KEY_MISSING,
        "The server's stored secrets cannot be decrypted with the configured MCP_ENCRYPTION_KEY (was the key changed?); update the server to store them again",
        undefined,
        false,
      );
    }
  }

  private opts() {
    return {
      timeoutMs: this.timeoutMs,
      down: {
        code: ErrorCode.CREDENTIALS_UNAVAILABLE,
        what: 'The credentials service did not answer for sealed MCP secrets',
      },
    };
  }
}

const wire = (r: SealRef) => ({ org_id: r.orgId, purpose: r.purpose, ref: r.ref });

/** The associated data blobs sealed with MCP_ENCRYPTION_KEY were bound to. */
function legacyAad(r: SealRef): string {
  return r.purpose === 'mcp-server'
    ? `mcp-server\u0000${r.orgId}\u0000${r.ref}`
    : `mcp-oauth-authorization\u0000${r.orgId}\u0000${r.ref}`;
}

/** The seal reference of a server's secrets. */
export const serverRef = (orgId: string, serverId: string): SealRef => ({
  orgId,
  purpose: 'mcp-server',
  ref: serverId,
});

/** The key of rows sealed before the key ring (to read them once more), if any is configured or left by development. */
function legacyKey(c: McpSyncConfig): Buffer | undefined {
  if (c.MCP_ENCRYPTION_KEY) return Buffer.from(c.MCP_ENCRYPTION_KEY, 'base64');
  if (c.MCP_ENCRYPTION_KEY_FILE) {
    const key = Buffer.from(readFileSync(c.MCP_ENCRYPTION_KEY_FILE, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new Error('MCP_ENCRYPTION_KEY_FILE: must hold base64 of 32 bytes');
    return key;
  }
  const file = resolve(c.MCP_DEV_KEY_FILE);
  if (c.TOOLPLANE_PROFILE === 'development' && existsSync(file))
    return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  return undefined;
}
