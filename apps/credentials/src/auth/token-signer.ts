import { Inject, Injectable } from '@nestjs/common';
import {
  OPERATOR_SUBJECT,
  TOKEN_ALGORITHM,
  TOKEN_AUDIENCE,
  TOKEN_ISSUER,
  TOKEN_USER_CLAIM,
  type Scope,
} from '@toolplane/contracts';
import { deriveKey, ed25519FromSeed } from '@toolplane/crypto';
import { SignJWT } from 'jose';
import { createHash, type KeyObject } from 'node:crypto';
import { KEY_RING, type KeyRing } from '../crypto/key-ring';

export interface TokenClaims {
  jti: string;
  /** undefined: a platform operator token. */
  org?: string;
  scopes: readonly Scope[];
  /** The end user an org token is bound to (the `uid` claim). */
  userId?: string;
  issuedAt: Date;
  expiresAt: Date;
}

/**
 * Signs org tokens: EdDSA (Ed25519) JWTs. Each key of the credentials key ring gives one signing
 * key (HKDF of the ring key, so no extra secret to keep) under the same id; the active key signs.
 * A token verifies while its key is in the ring: rotating the ring rotates token keys with it.
 */
@Injectable()
export class TokenSigner {
  private readonly keys = new Map<string, { privateKey: KeyObject; publicKey: string }>();
  private readonly published: Record<string, string>;
  private readonly fingerprint: string;

  constructor(@Inject(KEY_RING) private readonly ring: KeyRing) {
    for (const [id, kek] of ring.keys) this.keys.set(id, ed25519FromSeed(deriveKey(kek, 'toolplane/token-signing/v1')));
    // Fixed with the ring: computed once, not on every state request.
    this.published = Object.fromEntries([...this.keys].map(([id, k]) => [id, k.publicKey]));
    this.fingerprint = createHash('sha256').update(JSON.stringify(this.published)).digest('hex').slice(0, 12);
  }

  get activeKeyId(): string {
    return this.ring.activeKeyId;
  }

  /** kid → raw public key (base64url) for every key of the ring. */
  publicKeys(): Record<string, string> {
    return this.published;
  }

  /** A short fingerprint of the public key set (part of the verification state's version). */
  keysFingerprint(): string {
    return this.fingerprint;
  }

  sign(c: TokenClaims): Promise<string> {
    const kid = this.ring.activeKeyId;
    return new SignJWT({
      scope: c.scopes.join(' '),
      ...(c.org !== undefined ? { org: c.org } : {}),
      ...(c.userId !== undefined ? { [TOKEN_USER_CLAIM]: c.userId } : {}),
    })
      .setProtectedHeader({ alg: TOKEN_ALGORITHM, typ: 'JWT', kid })
      .setIssuer(TOKEN_ISSUER)
      .setAudience(TOKEN_AUDIENCE)
      .setSubject(c.org !== undefined ? `org:${c.org}` : OPERATOR_SUBJECT)
      .setJti(c.jti)
      .setIssuedAt(Math.floor(c.issuedAt.getTime() / 1000))
      .setExpirationTime(Math.floor(c.expiresAt.getTime() / 1000))
      .sign(this.keys.get(kid)!.privateKey);
  }
}
