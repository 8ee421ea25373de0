import { z } from 'zod';
import { baseEnvShape, ConfigError, parseEnv } from './env';

describe('parseEnv', () => {
  const shape = {
    ...baseEnvShape,
    HEALTH_PORT: baseEnvShape.HEALTH_PORT.default(8080),
    LIMIT: z.coerce.number().int().min(1).default(5),
  };

  it('applies defaults and coerces numbers', () => {
    const sut = parseEnv('app', shape, { LIMIT: '7' });
    expect(sut).toMatchObject({
      NATS_URL: 'nats://127.0.0.1:4222',
      HEALTH_PORT: 8080,
      LIMIT: 7,
      SUBJECT_PREFIX: '',
      LOG_FORMAT: 'json',
    });
  });

  it('creates streams on one server unless NATS_STREAM_REPLICAS says how many of a cluster (1–5)', () => {
    expect(parseEnv('app', shape, {}).NATS_STREAM_REPLICAS).toBe(1);
    expect(parseEnv('app', shape, { NATS_STREAM_REPLICAS: '3' }).NATS_STREAM_REPLICAS).toBe(3);
    for (const bad of ['0', '6', '2.5'])
      expect(() => parseEnv('app', shape, { NATS_STREAM_REPLICAS: bad })).toThrow(/NATS_STREAM_REPLICAS/);
  });

  it('reports every invalid variable by name, never by value', () => {
    try {
      parseEnv('app', shape, { LIMIT: '0', LOG_LEVEL: 'loud', SUBJECT_PREFIX: 'bad prefix!' });
      throw new Error('should have thrown');
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const msg = (e as Error).message;
      expect(msg).toContain('LIMIT');
      expect(msg).toContain('LOG_LEVEL');
      expect(msg).toContain('SUBJECT_PREFIX');
      expect(msg).not.toContain('bad prefix!');
    }
  });
});
