import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  type KeyObject,
} from 'node:crypto';

/** PKCS#8 DER prefix of an X25519 private key (RFC 8410): the 32-byte seed follows. */
const X25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');
/** SubjectPublicKeyInfo DER prefix of an X25519 public key: the 32 raw bytes follow. */
const X25519_SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
/** The same two prefixes for Ed25519 (RFC 8410). */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface X25519KeyPair {
  privateKey: KeyObject;
  /** The raw 32-byte public key, base64url. */
  publicKey: string;
}

export function generateX25519(): { seed: string; publicKey: string } {
  const { privateKey } = generateKeyPairSync('x25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(X25519_PKCS8_PREFIX.length);
  return { seed: seed.toString('base64url'), publicKey: rawPublic(privateKey) };
}

/** A key pair from its base64/base64url 32-byte seed. */
export function x25519FromSeed(seed: string): X25519KeyPair {
  const raw = Buffer.from(seed.trim(), 'base64url');
  if (raw.length !== 32) throw new Error('an X25519 private key is 32 bytes (base64 or base64url)');
  const privateKey = createPrivateKey({ key: Buffer.concat([X25519_PKCS8_PREFIX, raw]), format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: rawPublic(privateKey) };
}

export function x25519PublicKey(raw: string): KeyObject {
  const bytes = Buffer.from(raw.trim(), 'base64url');
  if (bytes.length !== 32) throw new Error('an X25519 public key is 32 bytes (base64 or base64url)');
  return createPublicKey({ key: Buffer.concat([X25519_SPKI_PREFIX, bytes]), format: 'der', type: 'spki' });
}

/**
 * The static key two parties share (X25519 + HKDF-SHA256), bound to both names and a purpose.
 * Either side computes the same key: names are ordered.
 */
export function pairwiseKey(own: KeyObject, peer: KeyObject, names: [string, string], purpose: string): Buffer {
  const shared = diffieHellman({ privateKey: own, publicKey: peer });
  if (shared.every((b) => b === 0)) throw new Error('X25519 produced the all-zero secret (a low-order public key)');
  const info = `${purpose}\u0000${[...names].sort().join('\u0000')}`;
  return Buffer.from(hkdfSync('sha256', shared, Buffer.from('toolplane/x25519/v1'), Buffer.from(info), 32));
}

/** A one-use key from a long-term key and a unique nonce (HMAC-SHA256 as a PRF). */
export function messageKey(key: Buffer, nonce: Buffer): Buffer {
  return createHmac('sha256', key).update(nonce).digest();
}

/** HKDF-SHA256 of `ikm` to `length` bytes for one purpose. */
export function deriveKey(ikm: Buffer, purpose: string, length = 32): Buffer {
  return Buffer.from(hkdfSync('sha256', ikm, Buffer.from('toolplane/derive/v1'), Buffer.from(purpose), length));
}

/** An Ed25519 signing key from 32 bytes of key material (e.g. derived with deriveKey), and its raw public key (base64url). */
export function ed25519FromSeed(seed: Buffer): { privateKey: KeyObject; publicKey: string } {
  if (seed.length !== 32) throw new Error('an Ed25519 seed is 32 bytes');
  const privateKey = createPrivateKey({
    key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]),
    format: 'der',
    type: 'pkcs8',
  });
  return { privateKey, publicKey: rawPublic(privateKey) };
}

export function ed25519PublicKey(raw: string): KeyObject {
  const bytes = Buffer.from(raw, 'base64url');
  if (bytes.length !== 32) throw new Error('an Ed25519 public key is 32 bytes (base64url)');
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, bytes]), format: 'der', type: 'spki' });
}

/** Both key types share the SPKI layout: 12 bytes of prefix, then the 32 raw bytes. */
function rawPublic(privateKey: KeyObject): string {
  return createPublicKey(privateKey)
    .export({ format: 'der', type: 'spki' })
    .subarray(X25519_SPKI_PREFIX.length)
    .toString('base64url');
}
