import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baseEnvShape, parseEnv } from './env';
import { natsConnectOptions, serviceKeysDir } from './nats-connection';

const shape = { ...baseEnvShape, HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8080) };
const config = (env: Record<string, string>) => parseEnv('app', shape, env);

describe('natsConnectOptions', () => {
  it('connects anonymously by default, with the app inbox prefix', () => {
    const sut = natsConnectOptions(config({ NATS_URL: 'nats://a:4222,nats://b:4222' }), 'executor');
    expect(sut).toEqual({
      servers: ['nats://a:4222', 'nats://b:4222'],
      name: 'executor',
      inboxPrefix: '_INBOX.executor',
    });
  });

  it('passes user and password, a token, TLS files and an inbox prefix from the environment', () => {
    const sut = natsConnectOptions(
      config({
        NATS_USER: 'executor',
        NATS_PASSWORD: 'pw',
        NATS_TOKEN: 't0k',
        NATS_TLS_CA: '/ca.pem',
        NATS_TLS_CERT: '/c.pem',
        NATS_TLS_KEY: '/k.pem',
        NATS_INBOX_PREFIX: '_I.x',
      }),
      'executor',
    );
    expect(sut).toMatchObject({
      user: 'executor',
      pass: 'pw',
      token: 't0k',
      tls: { caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem' },
      inboxPrefix: '_I.x',
    });
  });

  it('reads a creds file into an authenticator, and refuses a bad inbox prefix', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tp-creds-'));
    const file = join(dir, 'app.creds');
    writeFileSync(
      file,
      '-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.x\n------END NATS USER JWT------\n',
    );
    expect(typeof natsConnectOptions(config({ NATS_CREDS: file }), 'registry').authenticator).toBe('function');
    expect(() => config({ NATS_INBOX_PREFIX: 'bad prefix' })).toThrow(/NATS_INBOX_PREFIX/);
  });

  it('keeps service keys in .toolplane/keys in development and /etc/toolplane/keys in production', () => {
    expect(serviceKeysDir(config({ TOOLPLANE_PROFILE: 'development' }))).toMatch(/\/\.toolplane\/keys$/);
    expect(serviceKeysDir(config({}))).toBe('/etc/toolplane/keys');
    expect(serviceKeysDir(config({ SERVICE_KEYS_DIR: '/run/keys' }))).toBe('/run/keys');
  });
});
