import { eventSigningKey, ed25519PublicKeys, signEd25519, verifyEd25519 } from './signing';
import { ed25519PublicKey, generateX25519, x25519FromSeed } from './keys';

describe('event signing keys', () => {
  it('derives the same Ed25519 key from the same identity seed, another from another, and none equal to the X25519 key', () => {
    const a = generateX25519();
    const b = generateX25519();
    const sut = eventSigningKey(a.seed);
    expect(eventSigningKey(a.seed).publicKey).toBe(sut.publicKey);
    expect(eventSigningKey(`${a.seed}\n`).publicKey).toBe(sut.publicKey);
    expect(eventSigningKey(b.seed).publicKey).not.toBe(sut.publicKey);
    expect(sut.publicKey).not.toBe(x25519FromSeed(a.seed).publicKey);
    expect(() => eventSigningKey('c2hvcnQ')).toThrow(/32 bytes/);
  });

  it('verifies its own signature, and nothing else', () => {
    const k = eventSigningKey(generateX25519().seed);
    const other = eventSigningKey(generateX25519().seed);
    const data = Buffer.from('event');
    const sig = signEd25519(k.privateKey, data);
    expect(verifyEd25519(ed25519PublicKey(k.publicKey), data, sig)).toBe(true);
    expect(verifyEd25519(ed25519PublicKey(k.publicKey), Buffer.from('evenT'), sig)).toBe(false);
    expect(verifyEd25519(ed25519PublicKey(other.publicKey), data, sig)).toBe(false);
    expect(verifyEd25519(ed25519PublicKey(k.publicKey), data, sig.subarray(1))).toBe(false);
  });

  it('reads a rotated key set, one key a line, skipping what is not a key', () => {
    const [a, b] = [eventSigningKey(generateX25519().seed), eventSigningKey(generateX25519().seed)];
    const sut = ed25519PublicKeys(`${a.publicKey}\n# rotated in\n${b.publicKey}\nnot-a-key\n\n`);
    expect(sut.map((k) => k.export({ format: 'jwk' }).x)).toEqual([a.publicKey, b.publicKey]);
  });
});
