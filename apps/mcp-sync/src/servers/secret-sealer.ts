import { Inject, Injectable, Logger } from '@nestjs/common';
import { ErrorCode, ToolplaneError, type McpAuthInput } from '@toolplane/contracts';
import { APP_CONFIG } from '@toolplane/platform';
import { openAead, sealAead } from '@toolplane/crypto';
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { OAuthState } from '../connections/oauth-provider';
import type { McpSyncConfig } from '../mcp-sync.config';

/** What a server keeps sealed: every value that may carry a secret (templates included). */
export interface ServerSecrets {
  env?: Record<string, string>;
  headers?: Record<string, string>;
  auth?: McpAuthInput;
  /** What OAuth discovery and registration found (see OAuthState). */
  oauth?: OAuthState;
}

/**
 * AES-256-GCM (@toolplane/crypto's format: version | iv | tag | ct) with the key from
 * MCP_ENCRYPTION_KEY(_FILE); the associated data binds a blob to its org and server, so a blob
 * copied to another row does not open.
 * (To be replaced by the credentials service's storage once it offers one for MCP servers.)
 */
@Injectable()
export class SecretSealer {
  private readonly key: KeyObject;

  constructor(@Inject(APP_CONFIG) config: McpSyncConfig) {
    this.key = createSecretKey(loadKey(config));
  }

  seal(secrets: object, aad: string): Buffer {
    return sealAead(this.key, JSON.stringify(secrets), aad);
  }

  open<T extends object = ServerSecrets>(blob: Buffer | null, aad: string): Partial<T> {
    if (!blob) return {};
    try {
      return JSON.parse(openAead(this.key, blob, aad).toString('utf8')) as T;
    } catch {
      throw new ToolplaneError(
        ErrorCode.ENCRYPTION_KEY_MISSING,
        "The server's stored secrets cannot be decrypted with the configured MCP_ENCRYPTION_KEY (was the key changed?); update the server to store them again",
        undefined,
        false,
      );
    }
  }
}

export const secretsAad = (orgId: string, serverId: string): string => `mcp-server\u0000${orgId}\u0000${serverId}`;

function loadKey(c: McpSyncConfig): Buffer {
  if (c.MCP_ENCRYPTION_KEY) return Buffer.from(c.MCP_ENCRYPTION_KEY, 'base64');
  if (c.MCP_ENCRYPTION_KEY_FILE) {
    const key = Buffer.from(readFileSync(c.MCP_ENCRYPTION_KEY_FILE, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new Error('MCP_ENCRYPTION_KEY_FILE: must hold base64 of 32 bytes');
    return key;
  }
  // Development only (the config refuses production without a key): one generated key, kept.
  const file = resolve(c.MCP_DEV_KEY_FILE);
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    try {
      writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
      new Logger('SecretSealer').warn(`development profile: generated an MCP encryption key in ${file}; set MCP_ENCRYPTION_KEY in production`);
    } catch {
      // Another process wrote it first.
    }
  }
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
}
