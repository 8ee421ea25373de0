import { sign, verify, type KeyObject } from 'node:crypto';
import { deriveKey, ed25519FromSeed, ed25519PublicKey } from './keys';

/** The HKDF label of the event signing key: one identity seed, two keys that never meet (X25519 seals, Ed25519 signs). */
const EVENT_SIGNING_PURPOSE = 'toolplane/event-signing/v1';

/**
 * An app's Ed25519 event signing key, derived (HKDF-SHA256, its own label) from the app's X25519
 * identity seed (`<app>.key`): every replica, restarted or added, signs with the same key, and no
 * new secret is distributed. Its public key (base64url) is what consumers verify with.
 */
export function eventSigningKey(identitySeed: string): { privateKey: KeyObject; publicKey: string } {
  const raw = Buffer.from(identitySeed.trim(), 'base64url');
  if (raw.length !== 32) throw new Error('an identity seed is 32 bytes (base64 or base64url)');
  return ed25519FromSeed(deriveKey(raw, EVENT_SIGNING_PURPOSE));
}

/** Ed25519 signature of `data` (64 bytes). */
export function signEd25519(privateKey: KeyObject, data: Uint8Array): Buffer {
  return sign(null, data, privateKey);
}

/** Whether `signature` is an Ed25519 signature of `data` by `publicKey` (a malformed signature is false). */
export function verifyEd25519(publicKey: KeyObject, data: Uint8Array, signature: Uint8Array): boolean {
  if (signature.byteLength !== 64) return false;
  try {
    return verify(null, data, publicKey, signature);
  } catch {
    return false;
  }
}

/** Public keys from text, one base64url key a line (a rotated key set lists the old and the new); malformed lines are skipped. */
export function ed25519PublicKeys(text: string): KeyObject[] {
  const out: KeyObject[] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t || t.startsWith('#')) continue;
    try {
      out.push(ed25519PublicKey(t));
    } catch {
      // not a key: skipped
    }
  }
  return out;
}
