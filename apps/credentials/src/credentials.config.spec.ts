import { randomBytes } from 'node:crypto';
import { loadCredentialsConfig } from './credentials.config';

describe('loadCredentialsConfig', () => {
  const key = randomBytes(32).toString('base64');

  it('requires a key ring in production, and not in development or for migrations', () => {
    expect(() => loadCredentialsConfig({ TOOLPLANE_PROFILE: 'production' })).toThrow(
      /CREDENTIALS_KEYS: required in production/,
    );
    expect(loadCredentialsConfig({ TOOLPLANE_PROFILE: 'production' }, { requireKeys: false }).HEALTH_PORT).toBe(8085);
    expect(loadCredentialsConfig({ TOOLPLANE_PROFILE: 'development' }).CREDENTIALS_KEYS).toBeUndefined();
    expect(
      loadCredentialsConfig({ TOOLPLANE_PROFILE: 'production', CREDENTIALS_KEYS_FILE: '/var/run/secrets/keys' })
        .CREDENTIALS_KEYS_FILE,
    ).toBe('/var/run/secrets/keys');
  });

  it('reports a malformed ring or an unknown active key by name, never echoing key material', () => {
    const bad = `k1:${key.slice(0, 20)}`;
    try {
      loadCredentialsConfig({
        CREDENTIALS_KEYS: bad,
        CREDENTIALS_ACTIVE_KEY: 'k1',
        CREDENTIALS_WEBHOOK_ALLOWED_CIDRS: 'nope',
      });
      throw new Error('should have thrown');
    } catch (e) {
      const msg = (e as Error).message;
      expect(msg).toContain('CREDENTIALS_WEBHOOK_ALLOWED_CIDRS');
      expect(msg).not.toContain(key.slice(0, 20));
    }
    expect(() => loadCredentialsConfig({ CREDENTIALS_KEYS: bad })).toThrow(/key k1: must be 32 bytes/);
    expect(() => loadCredentialsConfig({ CREDENTIALS_KEYS: `k1:${key}`, CREDENTIALS_ACTIVE_KEY: 'k2' })).toThrow(
      /CREDENTIALS_ACTIVE_KEY: not a key id/,
    );
    expect(
      loadCredentialsConfig({
        CREDENTIALS_KEYS: `k1:${key}`,
        CREDENTIALS_WEBHOOK_ALLOWED_CIDRS: '10.0.0.0/8, 127.0.0.1/32',
      }).CREDENTIALS_WEBHOOK_ALLOWED_CIDRS,
    ).toEqual(['10.0.0.0/8', '127.0.0.1/32']);
  });
});
