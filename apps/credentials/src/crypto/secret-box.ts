import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { KeyRing } from './key-ring';

const VERSION = 1;
const IV = 12;
const TAG = 16;
const DEK = 32;

export interface Sealed {
  keyId: string;
  blob: Buffer;
}

/**
 * AES-256-GCM envelope encryption. Each value gets its own data key (DEK); the DEK is sealed by
 * the active key-encryption key, whose id is stored beside the value. The associated data binds a
 * value to its owner (org, scope, name...), so a ciphertext moved to another row does not open.
 *
 * blob = version(1) | dek iv(12) | dek tag(16) | sealed dek(32) | iv(12) | tag(16) | ciphertext
 */
export class SecretBox {
  constructor(private readonly ring: KeyRing) {}

  get activeKeyId(): string {
    return this.ring.activeKeyId;
  }

  hasKey(keyId: string): boolean {
    return this.ring.keys.has(keyId);
  }

  seal(plaintext: string, aad: string): Sealed {
    const keyId = this.ring.activeKeyId;
    const kek = this.ring.keys.get(keyId)!;
    const dek = randomBytes(DEK);
    const dekIv = randomBytes(IV);
    const wrap = createCipheriv('aes-256-gcm', kek, dekIv);
    wrap.setAAD(Buffer.from(`dek:${keyId}`));
    const sealedDek = Buffer.concat([wrap.update(dek), wrap.final()]);
    const iv = randomBytes(IV);
    const c = createCipheriv('aes-256-gcm', dek, iv);
    c.setAAD(Buffer.from(aad));
    const ct = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
    dek.fill(0);
    return { keyId, blob: Buffer.concat([Buffer.from([VERSION]), dekIv, wrap.getAuthTag(), sealedDek, iv, c.getAuthTag(), ct]) };
  }

  /** The plaintext, or ENCRYPTION_KEY_MISSING / INTERNAL: never garbage. `what` names the value (no content). */
  open(sealed: Sealed, aad: string, what: string): string {
    const kek = this.ring.keys.get(sealed.keyId);
    if (!kek) {
      throw new ToolplaneError(
        ErrorCode.ENCRYPTION_KEY_MISSING,
        `${what} was sealed with key '${sealed.keyId}', which is not in the key ring (CREDENTIALS_KEYS); add that key back or set the value again`,
        { key_id: sealed.keyId },
        false,
      );
    }
    const b = sealed.blob;
    if (b.length < 1 + IV + TAG + DEK + IV + TAG || b[0] !== VERSION) throw corrupt(what, sealed.keyId);
    let o = 1;
    const take = (n: number) => b.subarray(o, (o += n));
    const dekIv = take(IV);
    const dekTag = take(TAG);
    const sealedDek = take(DEK);
    const iv = take(IV);
    const tag = take(TAG);
    const ct = b.subarray(o);
    try {
      const unwrap = createDecipheriv('aes-256-gcm', kek, dekIv);
      unwrap.setAAD(Buffer.from(`dek:${sealed.keyId}`));
      unwrap.setAuthTag(dekTag);
      const dek = Buffer.concat([unwrap.update(sealedDek), unwrap.final()]);
      const d = createDecipheriv('aes-256-gcm', dek, iv);
      d.setAAD(Buffer.from(aad));
      d.setAuthTag(tag);
      const out = Buffer.concat([d.update(ct), d.final()]).toString('utf8');
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
  secret: (s: { orgId: string; scope: string; agentId: string; provider: string; key: string }) =>
    ['secret', s.orgId, s.scope, s.agentId, s.provider, s.key].join('\u0000'),
  webhook: (orgId: string) => ['webhook', orgId].join('\u0000'),
  oauthToken: (t: { orgId: string; serverId: string; issuer: string }) => ['oauth-token', t.orgId, t.serverId, t.issuer].join('\u0000'),
};
