/**
 * Where the tests find NATS and Postgres: NATS_URL / DATABASE_URL, else this machine's defaults
 * (the global setup may point them at testcontainers instead). Read on each call.
 */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
export const natsUrl = (): string => process.env.NATS_URL ?? DEFAULT_NATS_URL;
export const adminDatabaseUrl = (): string => process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;

export function databaseUrlFor(dbName: string): string {
  const u = new URL(adminDatabaseUrl());
  u.pathname = `/${dbName}`;
  return u.toString();
}

/** The repository root, whether this runs from test/support (jest) or dist/test/support (built). */
export const ROOT: string = (() => {
  const { resolve, basename } = require('node:path') as typeof import('node:path');
  const up = resolve(__dirname, '..', '..');
  return basename(up) === 'dist' ? resolve(up, '..') : up;
})();
