/** Where the tests find NATS and Postgres: NATS_URL / DATABASE_URL, else this machine's defaults. */
export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const ADMIN_DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrlFor(dbName: string): string {
  const u = new URL(ADMIN_DATABASE_URL);
  u.pathname = `/${dbName}`;
  return u.toString();
}

/** The repository root, whether this runs from test/support (jest) or dist/test/support (built). */
export const ROOT: string = (() => {
  const { resolve, basename } = require('node:path') as typeof import('node:path');
  const up = resolve(__dirname, '..', '..');
  return basename(up) === 'dist' ? resolve(up, '..') : up;
})();
