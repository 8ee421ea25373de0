import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { decryptGcm, encryptGcm, IV_BYTES, KEY_BYTES, TAG_BYTES } from '@toolplane/crypto';
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import type { KeyRing } from './key-ring';

const VERSION = 1;
/** version | sealed data key (iv | tag | 32 bytes) */
const DEK_END = 1 + IV_BYTES + TAG_BYTES + KEY_BYTES;

export interface SealedSecret {
  keyId: string;
  blob: Buffer;
}

/**
 * AES-256-GCM envelope encryption (the one format of @toolplane/crypto, twice). Each value gets
 * its own data key (DEK); the DEK is sealed by the active key-encryption key, whose id is stored
 * beside the value. The associated data binds a value to its owner (org, scope, name...), so a
 * ciphertext moved to another row does not open.
 *
 * blob = version(1) | dek iv(12) | dek tag(16) | sealed dek(32) | iv(12) | tag(16) | ciphertext
 */
export class SecretBox {
  private readonly keks: Map<string, KeyObject>;

  constructor(private readonly ring: KeyRing) {
    this.keks = new Map([...ring.keys].map(([id, key]) => [id, createSecretKey(key)]));
  }

  get activeKeyId(): string {
    return this.ring.activeKeyId;
  }

  hasKey(keyId: string): boolean {
    return this.ring.keys.has(keyId);
  }

  seal(plaintext: string, aad: string): SealedSecret {
    const keyId = this.ring.activeKeyId;
    const dek = randomBytes(KEY_BYTES);
    const blob = Buffer.concat([
      Buffer.from([VERSION]),
      encryptGcm(this.keks.get(keyId)!, dek, `dek:${keyId}`),
      encryptGcm(dek, plaintext, aad),
    ]);
    dek.fill(0);
    return { keyId, blob };
  }

  /** The plaintext, or ENCRYPTION_KEY_MISSING / INTERNAL: never garbage. `what` names the value (no content). */
  open(sealed: SealedSecret, aad: string, what: string): string {
    const kek = this.keks.get(sealed.keyId);
    if (!kek) {
      throw new ToolplaneError(
        ErrorCode.ENCRYPTION_KEY_MISSING,
        `${what} was sealed with key '${sealed.keyId}', which is not in the key ring (CREDENTIALS_KEYS); add that key back or set the value again`,
        { key_id: sealed.keyId },
        false,
      );
    }
    const b = sealed.blob;
    if (b.length < DEK_END + IV_BYTES + TAG_BYTES || b[0] !== VERSION) throw corrupt(what, sealed.keyId);
    try {
      const dek = decryptGcm(kek, b.subarray(1, DEK_END), `dek:${sealed.keyId}`);
      const out = decryptGcm(dek, b.subarray(DEK_END), aad).toString('utf8');
      dek.fill(0);
      return out;
    } catch {
      throw corrupt(what, sealed.keyId);
    }
  }
}

function corrupt(what: string, keyId: string): ToolplaneError {
  return new ToolplaneError(
    ErrorCode.ENCRYPTION_KEY_MISSING,
    `${what} cannot be decrypted with key '${keyId}' (a different key under the same id, or the stored value was altered)`,
    { key_id: keyId },
    false,
  );
}

/** Associated data for each kind of sealed value. */
export const aad = {
  /** An end user's secret binds its user too (older secrets have none: their data is unchanged). */
  secret: (s: { orgId: string; scope: string; agentId: string; userId?: string; provider: string; key: string }) =>
    ['secret', s.orgId, s.scope, s.agentId, s.provider, s.key, ...(s.userId ? [s.userId] : [])].join('\u0000'),
  webhook: (orgId: string) => ['webhook', orgId].join('\u0000'),
  /** An end user's tokens are bound to the user too (the org's keep their original binding). */
  oauthToken: (t: { orgId: string; serverId: string; issuer: string; userId?: string }) =>
    (t.userId
      ? ['oauth-token', t.orgId, t.serverId, t.issuer, 'user', t.userId]
      : ['oauth-token', t.orgId, t.serverId, t.issuer]
    ).join('\u0000'),
  sealedValue: (v: { org_id: string; purpose: string; ref: string }) =>
    ['sealed-value', v.purpose, v.org_id, v.ref].join('\u0000'),
};
