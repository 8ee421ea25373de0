import { sign, verify } from 'node:crypto';
import { AeadError, decryptGcm, encryptGcm, openAead, randomIv, sealAead } from './aead';
import {
  deriveKey,
  ed25519FromSeed,
  ed25519PublicKey,
  generateX25519,
  messageKey,
  pairwiseKey,
  x25519FromSeed,
  x25519PublicKey,
} from './keys';

describe('X25519 pairwise keys', () => {
  it('gives both parties the same key, bound to the pair and the purpose', () => {
    const a = generateX25519();
    const b = generateX25519();
    const c = generateX25519();
    const ab = pairwiseKey(x25519FromSeed(a.seed).privateKey, x25519PublicKey(b.publicKey), ['a', 'b'], 'seal');
    const ba = pairwiseKey(x25519FromSeed(b.seed).privateKey, x25519PublicKey(a.publicKey), ['b', 'a'], 'seal');
    expect(ab.equals(ba)).toBe(true);
    expect(ab).toHaveLength(32);
    expect(
      pairwiseKey(x25519FromSeed(a.seed).privateKey, x25519PublicKey(b.publicKey), ['a', 'b'], 'other').equals(ab),
    ).toBe(false);
    expect(
      pairwiseKey(x25519FromSeed(a.seed).privateKey, x25519PublicKey(c.publicKey), ['a', 'c'], 'seal').equals(ab),
    ).toBe(false);
    // The same seed always gives the same public key.
    expect(x25519FromSeed(a.seed).publicKey).toBe(a.publicKey);
  });

  it('refuses keys of the wrong size and the all-zero shared secret of a low-order point', () => {
    expect(() => x25519FromSeed('c2hvcnQ')).toThrow(/32 bytes/);
    expect(() => x25519PublicKey('AAAA')).toThrow(/32 bytes/);
    const own = x25519FromSeed(generateX25519().seed).privateKey;
    expect(() => pairwiseKey(own, x25519PublicKey(Buffer.alloc(32).toString('base64url')), ['a', 'b'], 'x')).toThrow();
  });
});

describe('AEAD', () => {
  const key = deriveKey(Buffer.from('k'.repeat(32)), 'test');

  it('round-trips and refuses another owner, another key or a flipped bit', () => {
    const blob = sealAead(key, 'sk-live-secret', 'org\u0000A');
    expect(blob.includes(Buffer.from('sk-live-secret'))).toBe(false);
    expect(openAead(key, blob, 'org\u0000A').toString()).toBe('sk-live-secret');
    expect(() => openAead(key, blob, 'org\u0000B')).toThrow(AeadError);
    expect(() => openAead(deriveKey(key, 'other'), blob, 'org\u0000A')).toThrow(AeadError);
    const flipped = Buffer.from(blob);
    flipped[flipped.length - 1]! ^= 1;
    expect(() => openAead(key, flipped, 'org\u0000A')).toThrow(AeadError);
    expect(() => openAead(key, blob.subarray(0, 10), 'org\u0000A')).toThrow(AeadError);
  });

  it('never hands out the same IV twice, across pool refills', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) seen.add(randomIv().toString('hex'));
    expect(seen.size).toBe(2000);
    expect(randomIv()).toHaveLength(12);
  });

  it('never repeats a ciphertext, and one-use message keys round-trip', () => {
    expect(sealAead(key, 'x', 'a').equals(sealAead(key, 'x', 'a'))).toBe(false);
    const k1 = messageKey(key, Buffer.from('nonce-1'));
    expect(k1.equals(messageKey(key, Buffer.from('nonce-2')))).toBe(false);
    expect(decryptGcm(k1, encryptGcm(k1, Buffer.from('body'), 'aad', Buffer.alloc(12)), 'aad').toString()).toBe('body');
  });
});

describe('Ed25519 from derived key material', () => {
  it('signs with the derived key and verifies with its raw public key', () => {
    const seed = deriveKey(Buffer.alloc(32, 7), 'token-signing');
    const { privateKey, publicKey } = ed25519FromSeed(seed);
    expect(ed25519FromSeed(seed).publicKey).toBe(publicKey);
    const sig = sign(null, Buffer.from('claims'), privateKey);
    expect(verify(null, Buffer.from('claims'), ed25519PublicKey(publicKey), sig)).toBe(true);
    expect(verify(null, Buffer.from('claimz'), ed25519PublicKey(publicKey), sig)).toBe(false);
  });
});
