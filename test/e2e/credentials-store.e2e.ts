/**
 * The credentials service alone, in the production profile (configured key ring, SSRF policy with
 * only 127.0.0.1 allowlisted), on its own database: the API, tenancy, what the tables hold, the
 * webhook address policy and key rotation.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { testPrefix, uniqueOrg } from '../support/context';
import { createDatabase, dropDatabase } from '../support/database';
import { ROOT, databaseUrlFor } from '../support/env';
import { mintOperatorToken } from '../support/identity';
import { RawClient } from '../support/nats-client';
import { startApp, type RunningApp, type StackOptions, stopProcess } from '../support/stack';
import { WebhookServer, json } from '../support/webhook-server';

const key = () => randomBytes(32).toString('base64');
const K1 = key();
const K2 = key();
const K3 = key();
const TOOL = 'tool-00000000-0000-4000-8000-000000000001';
const SIGNING = 'whsec-0123456789abcdef';

describe('credentials service (production profile)', () => {
  const dbName = `${process.env.TOOLPLANE_TEST_DB ?? 'tp_test'}_cr`;
  const databaseUrl = databaseUrlFor(dbName);
  const prefix = `${testPrefix()}cr`;
  const hooks = new WebhookServer(SIGNING);
  let app: RunningApp;
  let client: RawClient;
  const orgA = uniqueOrg('cr-a');
  const orgB = uniqueOrg('cr-b');
  const opts = (keys: string, active?: string): StackOptions => ({
    prefix,
    databaseUrl,
    env: {
      TOOLPLANE_PROFILE: 'production',
      CREDENTIALS_KEYS: keys,
      ...(active ? { CREDENTIALS_ACTIVE_KEY: active } : {}),
      CREDENTIALS_WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      CREDENTIALS_WEBHOOK_ALLOW_HTTP: 'true',
    },
  });
  const req = (subject: string, body: Record<string, unknown>) => client.req(subject, body);
  const resolve = (org: string, extra: Record<string, unknown> = {}) =>
    req('toolplane.internal.v1.execution-env.resolve', {
      org_id: org,
      tool_id: TOOL,
      tool_name: 't',
      project_id: null,
      provider: 'local',
      ...extra,
    });
  const restart = async (keys: string, active?: string) => {
    await stopProcess(app.proc);
    app = await startApp('credentials', opts(keys, active));
  };

  beforeAll(async () => {
    await createDatabase(dbName);
    await hooks.start();
    app = await startApp('credentials', opts(`k1:${K1}`));
    // This service has its own key ring, so its own operator token (from the CLI, as an operator mints one).
    client = await RawClient.connect(prefix, {
      operatorToken: mintOperatorToken(databaseUrl, { CREDENTIALS_KEYS: `k1:${K1}` }),
    });
  });
  afterAll(async () => {
    await client?.close();
    if (app) await stopProcess(app.proc);
    await hooks.stop();
    await dropDatabase(dbName);
  });

  it('stores secrets and answers with metadata only, never a value', async () => {
    const set = await req('toolplane.v1.secrets.set', {
      org_id: orgA,
      scope: 'agent',
      agent_id: 'agent-1',
      key: 'API_TOKEN',
      value: 'tok-agent-A-1111',
      description: 'the API',
    });
    expect(set.secret).toMatchObject({
      key: 'API_TOKEN',
      scope: 'agent',
      agent_id: 'agent-1',
      provider: null,
      description: 'the API',
      mask: true,
    });
    expect(JSON.stringify(set)).not.toContain('tok-agent-A-1111');
    await req('toolplane.v1.secrets.set', {
      org_id: orgA,
      scope: 'sandbox',
      key: 'REGION',
      value: 'sandbox-region-any',
      mask: false,
    });
    await req('toolplane.v1.secrets.set', {
      org_id: orgA,
      scope: 'sandbox',
      provider: 'local',
      key: 'REGION',
      value: 'sandbox-region-local',
    });
    await req('toolplane.v1.secrets.set', {
      org_id: orgA,
      scope: 'sandbox',
      provider: 'e2b',
      key: 'ONLY_E2B',
      value: 'e2b-only-value',
    });
    const list = await req('toolplane.v1.secrets.list', { org_id: orgA });
    expect(list.secrets.map((s: any) => `${s.scope}:${s.key}:${s.provider}`)).toEqual([
      'agent:API_TOKEN:null',
      'sandbox:ONLY_E2B:e2b',
      'sandbox:REGION:null',
      'sandbox:REGION:local',
    ]);
    expect(JSON.stringify(list)).not.toMatch(/tok-agent|sandbox-region|e2b-only/);
    expect(
      (await req('toolplane.v1.secrets.list', { org_id: orgA, scope: 'agent', agent_id: 'agent-1' })).secrets,
    ).toHaveLength(1);
    // the API's rules
    expect(
      (await req('toolplane.v1.secrets.set', { org_id: orgA, scope: 'agent', key: 'X', value: 'v' })).error.code,
    ).toBe('CONTRACT_VIOLATION');
    expect(
      (await req('toolplane.v1.secrets.set', { org_id: orgA, scope: 'sandbox', key: 'TOOLPLANE_ORG_ID', value: 'v' }))
        .error.code,
    ).toBe('CONTRACT_VIOLATION');
    await req('toolplane.v1.secrets.set', { org_id: orgA, scope: 'sandbox', key: 'GONE', value: 'v-gone' });
    expect(await req('toolplane.v1.secrets.delete', { org_id: orgA, scope: 'sandbox', key: 'GONE' })).toEqual({
      deleted: true,
    });
    expect((await req('toolplane.v1.secrets.delete', { org_id: orgA, scope: 'sandbox', key: 'GONE' })).error.code).toBe(
      'SECRET_NOT_FOUND',
    );
  });

  it('answers a set racing a delete of the same secret or webhook with the row it wrote, never INTERNAL', async () => {
    const org = uniqueOrg('cr-race');
    const url = hooks.url('/race');
    for (let i = 0; i < 40; i++) {
      const [set, del, hook, unhook] = await Promise.all([
        req('toolplane.v1.secrets.set', { org_id: org, scope: 'sandbox', key: 'RACY', value: `racy-${i}` }),
        req('toolplane.v1.secrets.delete', { org_id: org, scope: 'sandbox', key: 'RACY' }),
        req('toolplane.v1.webhooks.set', { org_id: org, url, signing_secret: SIGNING }),
        req('toolplane.v1.webhooks.delete', { org_id: org }),
      ]);
      expect([i, set.error, hook.error]).toEqual([i, undefined, undefined]);
      expect(set.secret).toMatchObject({ key: 'RACY' });
      // A delete either found the row or did not: a typed answer either way.
      for (const d of [del, unhook])
        expect(String(d.error === undefined ? d.deleted : d.error.code)).toMatch(
          /^(true|SECRET_NOT_FOUND|WEBHOOK_NOT_FOUND)$/,
        );
    }
    // Nothing of this org is left for the key rotation test to count.
    await req('toolplane.v1.secrets.delete', { org_id: org, scope: 'sandbox', key: 'RACY' });
    await req('toolplane.v1.webhooks.delete', { org_id: org });
    expect((await req('toolplane.v1.secrets.list', { org_id: org })).secrets).toEqual([]);
  });

  it("resolves an agent's env for a provider and never shows another org's secrets", async () => {
    const a = await resolve(orgA, { agent_id: 'agent-1', env: { PER_CALL: 'x' } });
    expect(a.env).toEqual({
      API_TOKEN: 'tok-agent-A-1111',
      REGION: 'sandbox-region-local',
      PER_CALL: 'x',
      TOOLPLANE_ORG_ID: orgA,
      TOOLPLANE_TOOL_ID: TOOL,
      TOOLPLANE_AGENT_ID: 'agent-1',
    });
    expect(a.masked_keys.sort()).toEqual(['API_TOKEN', 'REGION']);
    expect((await resolve(orgA, { agent_id: 'agent-2' })).env).not.toHaveProperty('API_TOKEN');
    const b = await resolve(orgB, { agent_id: 'agent-1' });
    expect(b.env).toEqual({ TOOLPLANE_ORG_ID: orgB, TOOLPLANE_TOOL_ID: TOOL, TOOLPLANE_AGENT_ID: 'agent-1' });
    expect(b.sandbox_config_fingerprint).toBeNull();
    expect((await req('toolplane.v1.secrets.list', { org_id: orgB })).secrets).toEqual([]);
    expect(
      (
        await req('toolplane.v1.secrets.delete', {
          org_id: orgB,
          scope: 'agent',
          agent_id: 'agent-1',
          key: 'API_TOKEN',
        })
      ).error.code,
    ).toBe('SECRET_NOT_FOUND');
  });

  it('gives a sandbox config a fingerprint that changes with its settings and its env vars', async () => {
    const up = await req('toolplane.v1.sandbox-configs.upsert', {
      org_id: orgA,
      provider: 'local',
      config: { timeout_ms: 5000, pip_requirements: [{ name: 'requests' }] },
    });
    const fp1 = up.sandbox_config.fingerprint;
    expect(fp1).toMatch(/^[0-9a-f]{64}$/);
    expect(
      (await req('toolplane.v1.sandbox-configs.get', { org_id: orgA, provider: 'local' })).sandbox_config.fingerprint,
    ).toBe(fp1);
    expect((await resolve(orgA)).sandbox_config_fingerprint).toBe(fp1);
    const fp2 = (
      await req('toolplane.v1.sandbox-configs.upsert', {
        org_id: orgA,
        provider: 'local',
        config: { timeout_ms: 6000, pip_requirements: [{ name: 'requests' }] },
      })
    ).sandbox_config.fingerprint;
    expect(fp2).not.toBe(fp1);
    await req('toolplane.v1.secrets.set', {
      org_id: orgA,
      scope: 'sandbox',
      provider: 'local',
      key: 'REGION',
      value: 'sandbox-region-local',
    });
    const fp3 = (await req('toolplane.v1.sandbox-configs.get', { org_id: orgA, provider: 'local' })).sandbox_config
      .fingerprint;
    expect(fp3).not.toBe(fp2);
    expect(
      (await req('toolplane.v1.sandbox-configs.list', { org_id: orgA })).sandbox_configs.map((c: any) => c.provider),
    ).toEqual(['local']);
    expect((await req('toolplane.v1.sandbox-configs.get', { org_id: orgA, provider: 'modal' })).error.code).toBe(
      'SANDBOX_CONFIG_NOT_FOUND',
    );
    expect((await req('toolplane.v1.sandbox-configs.get', { org_id: orgB, provider: 'local' })).error.code).toBe(
      'SANDBOX_CONFIG_NOT_FOUND',
    );
  });

  it('refuses private, loopback and metadata webhook addresses unless allowlisted, and redirects to them', async () => {
    const set = (url: string) =>
      req('toolplane.v1.webhooks.set', { org_id: orgB, url, signing_secret: SIGNING, fail_mode: 'closed' });
    for (const url of [
      'http://127.0.0.2:9/hook',
      'http://10.0.0.1/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]:9/',
      'http://[fd00:ec2::254]/',
    ]) {
      const r = await set(url);
      expect([url, r.error?.code]).toEqual([url, 'WEBHOOK_URL_REFUSED']);
    }
    expect((await req('toolplane.v1.webhooks.get', { org_id: orgB })).error.code).toBe('WEBHOOK_NOT_FOUND');

    const good = hooks.route('/good', (_h, res) => json(res, 200, { env: { FROM_HOOK: 'hook-value-B' } }));
    expect((await set(good)).webhook).toEqual({ url: good, timeout_ms: 2000, fail_mode: 'closed', cache_ttl_ms: 0 });
    expect((await resolve(orgB, { agent_id: 'ag' })).env.FROM_HOOK).toBe('hook-value-B');
    const seen = hooks.received.filter((h) => h.path === '/good').at(-1)!;
    expect(seen.verified).toBe(true);
    expect(seen.body).toEqual({
      organization_id: orgB,
      agent_id: 'ag',
      user_id: null,
      tool_id: TOOL,
      tool_name: 't',
      project_id: null,
    });

    // allowlisted 127.0.0.1 redirecting to 127.0.0.2 (loopback, not allowlisted): refused, nothing sent there
    await set(
      hooks.route('/to-private', (_h, res) => void res.writeHead(307, { location: 'http://127.0.0.2:9/steal' }).end()),
    );
    const r = await resolve(orgB);
    expect(r.error).toMatchObject({
      code: 'CREDENTIALS_UNAVAILABLE',
      retryable: true,
      details: { reason: 'refused_address' },
    });
    expect(r.error.message).toContain('127.0.0.2');
    await set(hooks.route('/moved', (_h, res) => void res.writeHead(302, { location: good }).end()));
    expect((await resolve(orgB)).error.details.reason).toBe('redirect');
    expect(await req('toolplane.v1.webhooks.delete', { org_id: orgB })).toEqual({ deleted: true });
  });

  it('keeps no plaintext in its tables', async () => {
    await req('toolplane.v1.webhooks.set', { org_id: orgA, url: hooks.url('/good'), signing_secret: SIGNING });
    const pg = new Client({ connectionString: databaseUrl });
    await pg.connect();
    try {
      const rows = [];
      for (const t of ['secrets', 'webhooks', 'sandbox_configs'])
        rows.push(
          ...(await pg.query(`SELECT t::text AS row FROM credentials.${t} t`)).rows.map((r) => r.row as string),
        );
      expect(rows.length).toBeGreaterThanOrEqual(6);
      const dump = rows.join('\n');
      for (const plain of [
        'tok-agent-A-1111',
        'sandbox-region-local',
        'sandbox-region-any',
        'e2b-only-value',
        SIGNING,
      ]) {
        expect(dump).not.toContain(plain);
        expect(dump).not.toContain(Buffer.from(plain).toString('hex'));
      }
      const keyIds = (await pg.query(`SELECT DISTINCT key_id FROM credentials.secrets`)).rows.map((r) => r.key_id);
      expect(keyIds).toEqual(['k1']);
    } finally {
      await pg.end();
    }
  });

  it('re-encrypts everything under the new active key, and a missing key fails clearly', async () => {
    const tokenRef = { org_id: orgA, server_id: 'mcp-rotation', issuer: 'https://issuer.example/token' };
    const tokens = {
      access_token: 'at-rotated-5555',
      refresh_token: 'rt-rotated-5555',
      issued_at: Date.now(),
      expires_at: null,
      scope: null,
    };
    expect((await req('toolplane.internal.v1.mcp-oauth-tokens.store', { ...tokenRef, tokens })).stored).toBe(true);
    // An end user's connected account of the same server: its own record, bound to the user.
    const userRef = { ...tokenRef, user_id: 'user-rot' };
    const userTokens = { ...tokens, access_token: 'at-user-rotated-6666', refresh_token: 'rt-user-rotated-6666' };
    expect((await req('toolplane.internal.v1.mcp-oauth-tokens.store', { ...userRef, tokens: userTokens })).stored).toBe(
      true,
    );
    const run = await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'dist/apps/credentials/src/database/rotate-keys.js')],
      {
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: databaseUrl,
          TOOLPLANE_PROFILE: 'production',
          CREDENTIALS_KEYS: `k1:${K1},k2:${K2}`,
          CREDENTIALS_ACTIVE_KEY: 'k2',
        },
      },
    );
    expect(run.stdout).toMatch(
      /re-encrypted 4 secret\(s\), 1 webhook signing secret\(s\) and 2 MCP OAuth token record\(s\) under key 'k2'/,
    );
    expect(run.stdout + run.stderr).not.toMatch(/tok-agent-A-1111|rotated-5555/);

    // Tokens rotate with the ring: one signed by k1 works while k1 is in the ring, and stops when k1 leaves it.
    const byK1 = (await client.mint(orgA, { name: 'before rotation' })).token;
    await restart(`k1:${K1},k2:${K2}`, 'k2');
    const listWith = (token: string) => client.req('toolplane.v1.secrets.list', { org_id: orgA }, { token });
    expect((await listWith(byK1)).secrets.length).toBeGreaterThan(0);
    const byK2 = (
      await client.mint(
        orgA,
        { name: 'after rotation' },
        mintOperatorToken(databaseUrl, { CREDENTIALS_KEYS: `k1:${K1},k2:${K2}`, CREDENTIALS_ACTIVE_KEY: 'k2' }),
      )
    ).token;
    expect(JSON.parse(Buffer.from(byK2.split('.')[0]!, 'base64url').toString()).kid).toBe('k2');

    await restart(`k2:${K2}`); // k1 is gone: everything must open with k2 alone
    expect((await listWith(byK1)).error).toMatchObject({
      code: 'UNAUTHENTICATED',
      message: expect.stringMatching(/signed with (an unknown key|a key that is no longer trusted)/),
      retryable: false,
    });
    expect((await listWith(byK2)).secrets.length).toBeGreaterThan(0);
    const a = await resolve(orgA, { agent_id: 'agent-1' });
    expect(a.env).toMatchObject({
      API_TOKEN: 'tok-agent-A-1111',
      REGION: 'sandbox-region-local',
      FROM_HOOK: 'hook-value-B',
    });
    expect(hooks.received.at(-1)!.verified).toBe(true); // the signing secret survived rotation too
    expect((await req('toolplane.internal.v1.mcp-oauth-tokens.fetch', tokenRef)).tokens).toEqual(tokens);
    expect((await req('toolplane.internal.v1.mcp-oauth-tokens.fetch', userRef)).tokens).toEqual(userTokens);
    expect(
      (await req('toolplane.internal.v1.mcp-oauth-tokens.fetch', { ...tokenRef, user_id: 'someone-else' })).tokens,
    ).toBeNull();

    await restart(`k3:${K3}`);
    const r = await resolve(orgA, { agent_id: 'agent-1' });
    expect(r.error.code).toBe('ENCRYPTION_KEY_MISSING');
    expect(r.error.message).toMatch(/sealed with key 'k2', which is not in the key ring/);
    expect(JSON.stringify(r)).not.toContain('tok-agent');
    expect(app.output()).not.toMatch(/tok-agent-A-1111|sandbox-region|hook-value-B|whsec-|rotated-5555/);
  });
});
