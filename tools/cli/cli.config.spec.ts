import { ToolplaneError } from '@toolplane/client';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from './cli.config';
import { ExitCode, exitCodeOf, UsageError } from './cli.errors';

describe('CLI configuration', () => {
  const saved = { ...process.env };
  const dir = mkdtempSync(join(tmpdir(), 'tp-cli-config-'));
  const profiles = join(dir, 'profiles.json');
  writeFileSync(
    profiles,
    JSON.stringify({
      default: {
        nats_url: 'nats://profile:4222',
        token: 'profile-token',
        org: 'profile-org',
        prefix: 'p',
        keys_dir: 'profile-keys',
      },
      staging: { org: 'staging-org' },
    }),
  );

  beforeEach(() => {
    for (const k of [
      'TOOLPLANE_NATS_URL',
      'TOOLPLANE_TOKEN',
      'TOOLPLANE_ORG',
      'TOOLPLANE_PREFIX',
      'TOOLPLANE_KEYS_DIR',
    ])
      delete process.env[k];
    process.env.TOOLPLANE_CONFIG = profiles;
  });
  afterAll(() => {
    process.env = saved;
  });

  it('takes flags over env over the profile file', () => {
    expect(loadConfig({})).toEqual({
      natsUrl: 'nats://profile:4222',
      token: 'profile-token',
      org: 'profile-org',
      prefix: 'p',
      keysDir: 'profile-keys',
      json: false,
    });
    process.env.TOOLPLANE_KEYS_DIR = 'env-keys';
    expect(loadConfig({})).toMatchObject({ keysDir: 'env-keys' });
    expect(loadConfig({ keysDir: 'flag-keys' })).toMatchObject({ keysDir: 'flag-keys' });
    process.env.TOOLPLANE_ORG = 'env-org';
    process.env.TOOLPLANE_TOKEN = 'env-token';
    expect(loadConfig({})).toMatchObject({ org: 'env-org', token: 'env-token', natsUrl: 'nats://profile:4222' });
    expect(loadConfig({ org: 'flag-org', json: true })).toMatchObject({
      org: 'flag-org',
      token: 'env-token',
      json: true,
    });
  });

  it('reads a named profile and refuses an unknown one', () => {
    expect(loadConfig({ profile: 'staging' })).toMatchObject({
      org: 'staging-org',
      natsUrl: 'nats://127.0.0.1:4222',
      prefix: '',
    });
    expect(() => loadConfig({ profile: 'nope' })).toThrow(UsageError);
  });

  it('maps failures to exit codes', () => {
    const err = (code: string, retryable = false) =>
      new ToolplaneError({ code, message: 'm', retryable, subject: 's' });
    expect(exitCodeOf(new UsageError('x'))).toBe(ExitCode.USAGE);
    expect(exitCodeOf(err('TOOL_NOT_FOUND'))).toBe(ExitCode.NOT_FOUND);
    expect(exitCodeOf(err('UNAUTHENTICATED'))).toBe(ExitCode.AUTH);
    expect(exitCodeOf(err('FORBIDDEN'))).toBe(ExitCode.AUTH);
    expect(exitCodeOf(err('SERVICE_UNAVAILABLE', true))).toBe(ExitCode.UNAVAILABLE);
    expect(exitCodeOf(err('SCHEMA_INVALID'))).toBe(ExitCode.FAILED);
    expect(exitCodeOf(new Error('boom'))).toBe(ExitCode.FAILED);
  });
});
