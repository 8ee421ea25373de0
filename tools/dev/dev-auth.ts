/**
 * The development profile's tokens: `npm start` keeps a platform operator token in
 * .toolplane/admin.token (mode 0600); these helpers use it to mint org tokens over NATS.
 */
import { headers, type NatsConnection } from '@nats-io/transport-node';
import { AuthTokensCreate, Headers } from '@toolplane/contracts';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(__dirname, '..', '..', '..');
export const ADMIN_TOKEN_FILE = join(ROOT, '.toolplane', 'admin.token');

export function adminToken(): string {
  if (!existsSync(ADMIN_TOKEN_FILE))
    throw new Error(`${ADMIN_TOKEN_FILE} is missing: run \`npm start\` first (it creates the development admin token)`);
  return readFileSync(ADMIN_TOKEN_FILE, 'utf8').trim();
}

/** A JSON request with `authorization: Bearer <token>`; the reply body (or the error envelope). */
export async function ask(nc: NatsConnection, subject: string, body: unknown, token: string): Promise<any> {
  const h = headers();
  h.set(Headers.AUTHORIZATION, `Bearer ${token}`);
  return (await nc.request(subject, JSON.stringify(body), { timeout: 30_000, headers: h })).json();
}

export async function mintOrgToken(
  nc: NatsConnection,
  org: string,
  opts: { name?: string; scopes?: string[]; ttl_s?: number } = {},
): Promise<{ token: string; token_id: string; scopes: string[]; expires_at: string }> {
  const r = await ask(
    nc,
    AuthTokensCreate.subject,
    {
      org_id: org,
      name: opts.name ?? 'development',
      ...(opts.scopes ? { scopes: opts.scopes } : {}),
      ...(opts.ttl_s ? { ttl_s: opts.ttl_s } : {}),
    },
    adminToken(),
  );
  if (r.error) throw new Error(`could not mint a token for ${org}: ${r.error.code}: ${r.error.message}`);
  return r;
}
