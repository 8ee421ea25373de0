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
