import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseKeyRingSpec } from '../key-ring-spec';
import { loadKeyRing } from './key-ring';
import { SecretBox } from './secret-box';

const k1 = randomBytes(32);
const k2 = randomBytes(32);
const ring = (active: string, keys: Record<string, Buffer>) => ({
  keys: new Map(Object.entries(keys)),
  activeKeyId: active,
});

describe('SecretBox', () => {
  it('seals with the active key, records its id, and opens what it sealed', () => {
    const sut = new SecretBox(ring('k2', { k1, k2 }));
    const sealed = sut.seal('sk-live-very-secret', 'org\u0000A');
    expect(sealed.keyId).toBe('k2');
    expect(sealed.blob.includes(Buffer.from('sk-live-very-secret'))).toBe(false);
    expect(sut.open(sealed, 'org\u0000A', 'secret A')).toBe('sk-live-very-secret');
    // a fresh data key per value: the same plaintext never gives the same bytes
    expect(sut.seal('sk-live-very-secret', 'org\u0000A').blob.equals(sealed.blob)).toBe(false);
  });

  it('refuses a value moved to another owner (associated data) or altered, never returning garbage', () => {
    const sut = new SecretBox(ring('k1', { k1 }));
    const sealed = sut.seal('value', 'org\u0000A');
    expect(() => sut.open(sealed, 'org\u0000B', 'secret')).toThrow(
      expect.objectContaining({ code: 'ENCRYPTION_KEY_MISSING' }),
    );
    const altered = Buffer.from(sealed.blob);
    altered[altered.length - 1]! ^= 1;
    expect(() => sut.open({ keyId: 'k1', blob: altered }, 'org\u0000A', 'secret')).toThrow(
      /cannot be decrypted with key 'k1'/,
    );
  });

  it('fails with a clear error naming the key when the key is not in the ring', () => {
    const sealed = new SecretBox(ring('k1', { k1 })).seal('value', 'a');
    const sut = new SecretBox(ring('k2', { k2 }));
    expect(() => sut.open(sealed, 'a', 'agent secret API_KEY')).toThrow(
      "agent secret API_KEY was sealed with key 'k1', which is not in the key ring (CREDENTIALS_KEYS); add that key back or set the value again",
    );
  });
});

describe('key ring', () => {
  it('parses id:base64 entries and reports bad ones without echoing key material', () => {
    const sut = parseKeyRingSpec(`k1:${k1.toString('base64')}, k2:${k2.toString('base64')}`);
    expect([...sut.keys()]).toEqual(['k1', 'k2']);
    expect(sut.get('k2')!.equals(k2)).toBe(true);
    expect(() => parseKeyRingSpec('k1:c2hvcnQ=')).toThrow('key k1: must be 32 bytes (base64), got 5');
    expect(() => parseKeyRingSpec('c2hvcnQ=')).toThrow(/entry 1: expected id:base64key/);
  });

  it('requires configured keys in production and an active key that exists', () => {
    expect(() => loadKeyRing({ TOOLPLANE_PROFILE: 'production', CREDENTIALS_DEV_KEY_FILE: '/nonexistent' })).toThrow(
      /required in production/,
    );
    expect(() =>
      loadKeyRing({
        TOOLPLANE_PROFILE: 'production',
        CREDENTIALS_KEYS: `k1:${k1.toString('base64')}`,
        CREDENTIALS_ACTIVE_KEY: 'k9',
        CREDENTIALS_DEV_KEY_FILE: '',
      }),
    ).toThrow(/k9 is not in the key ring/);
    const last = loadKeyRing({
      TOOLPLANE_PROFILE: 'production',
      CREDENTIALS_KEYS: `a:${k1.toString('base64')},b:${k2.toString('base64')}`,
      CREDENTIALS_DEV_KEY_FILE: '',
    });
    expect(last.activeKeyId).toBe('b');
  });

  it('in development, generates a key once (0600), keeps it, and warns loudly', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tp-devkey-')), 'sub', 'dev.key');
    const warnings: string[] = [];
    const log = { warn: (m: string) => warnings.push(m) } as never;
    const first = loadKeyRing({ TOOLPLANE_PROFILE: 'development', CREDENTIALS_DEV_KEY_FILE: file }, log);
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const again = loadKeyRing({ TOOLPLANE_PROFILE: 'development', CREDENTIALS_DEV_KEY_FILE: file }, log);
    expect(again.keys.get('dev')!.equals(first.keys.get('dev')!)).toBe(true);
    expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64').length).toBe(32);
    expect(warnings[0]).toMatch(/NO ENCRYPTION KEYS CONFIGURED.*DEVELOPMENT key/);
  });
});
