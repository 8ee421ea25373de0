/** Where the tests find NATS and Postgres: NATS_URL / DATABASE_URL, else this machine's defaults. */
export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const ADMIN_DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrlFor(dbName: string): string {
  const u = new URL(ADMIN_DATABASE_URL);
  u.pathname = `/${dbName}`;
  return u.toString();
}

export const ROOT = require('node:path').resolve(__dirname, '..', '..') as string;
