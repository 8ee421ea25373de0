/**
 * Identity on the wire, tried as an attacker on the bus would: every public request needs an org
 * token for its own org with the subject's scope; tokens are minted, listed, revoked and tied to
 * the key ring; deleted orgs stay out.
 */
import { SignJWT } from 'jose';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { REQUESTS } from '@toolplane/contracts';
import { expectEventually } from '@toolplane/testing';
import { parseKeyRingSpec } from '../../apps/credentials/src/key-ring-spec';
import { TokenSigner } from '../../apps/credentials/src/auth/token-signer';
import { testPrefix, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { ADD } from '../support/tools';

const ring = () => {
  const keys = parseKeyRingSpec(process.env.TOOLPLANE_TEST_CREDENTIALS_KEYS!);
  return { keys, activeKeyId: [...keys.keys()].at(-1)! };
};
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

describe('org tokens at the edge of every service', () => {
  let client: RawClient;
  const org = uniqueOrg('auth');
  const other = uniqueOrg('auth-other');

  beforeAll(async () => {
    client = await RawClient.connect(testPrefix());
  });
  afterAll(() => client.close());

  const list = (token: string | null, orgId = org) =>
    client.req('toolplane.v1.tools.list', { org_id: orgId }, { token });
  const refused = (r: any, code = 'UNAUTHENTICATED') => {
    expect(r.error).toMatchObject({ code, retryable: false });
    return r.error.message as string;
  };

  it('refuses a public request with no token, a malformed header, two tokens or an oversized header, and stores nothing', async () => {
    const upsert = (headers?: ReturnType<RawClient['headers']>) =>
      client.req(
        'toolplane.v1.tools.upsert',
        { org_id: org, tool: { source_code: ADD } },
        headers ? { headers } : { token: null },
      );
    expect(refused(await upsert())).toMatch(/needs an org token/);
    const good = await client.tokenFor(org);
    const cases: Array<[string, (h: ReturnType<RawClient['headers']>) => void, RegExp]> = [
      ['not bearer', (h) => h.set('authorization', `Basic ${good}`), /not `Bearer <jwt>`/],
      ['not a jwt', (h) => h.set('authorization', 'Bearer not-a-token'), /not `Bearer <jwt>`/],
      [
        'two tokens',
        (h) => (h.append('authorization', `Bearer ${good}`), h.append('authorization', `Bearer ${good}`)),
        /exactly one/,
      ],
      ['oversized', (h) => h.set('authorization', `Bearer ${'a'.repeat(5000)}.${'b'.repeat(3000)}.c`), /longer than/],
    ];
    for (const [, set, message] of cases) {
      const h = client.headers();
      set(h);
      expect(refused(await upsert(h))).toMatch(message);
    }
    expect((await list(good)).tools).toEqual([]);
  });

  it('refuses forged, unsigned, expired, foreign-key and wrong-audience tokens', async () => {
    const good = await client.tokenFor(org);
    const [header, , signature] = good.split('.');
    const payload = JSON.parse(Buffer.from(good.split('.')[1]!, 'base64url').toString());
    // The same signature over another org's claims.
    expect(
      refused(await list(`${header}.${b64({ ...payload, org: other, sub: `org:${other}` })}.${signature}`, other)),
    ).toMatch(/signature is invalid/);
    // alg: none, with and without a signature.
    const none = `${b64({ alg: 'none', typ: 'JWT', kid: 'test' })}.${b64(payload)}`;
    expect(refused(await list(`${none}.`))).toMatch(/not `Bearer <jwt>`|EdDSA, not none/);
    expect(refused(await list(`${none}.${signature}`))).toMatch(/EdDSA, not none/);
    // HS256 keyed with anything an attacker knows.
    const hs = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'HS256', kid: 'test' })
      .sign(new TextEncoder().encode('the public key, maybe'));
    expect(refused(await list(hs))).toMatch(/EdDSA, not HS256/);
    // Signed with a key Toolplane never had, under a kid it has.
    const kid = JSON.parse(Buffer.from(header!, 'base64url').toString()).kid;
    const stranger = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'EdDSA', kid })
      .sign(generateKeyPairSync('ed25519').privateKey);
    expect(refused(await list(stranger))).toMatch(/signature is invalid/);
    // Signed with the real key but expired, or for another audience.
    const signer = new TokenSigner(ring());
    const expired = await signer.sign({
      jti: 'tok-00000000-0000-4000-8000-000000000001',
      org,
      scopes: ['tools:read'],
      issuedAt: new Date((now() - 7200) * 1000),
      expiresAt: new Date((now() - 3600) * 1000),
    });
    expect(refused(await list(expired))).toMatch(/expired/);
    const otherAudience = await new SignJWT({ org, scope: 'tools:read' })
      .setProtectedHeader({ alg: 'EdDSA', kid })
      .setAudience('someone-else')
      .setIssuer('toolplane')
      .setSubject(`org:${org}`)
      .setJti('tok-00000000-0000-4000-8000-000000000002')
      .setExpirationTime('1h')
      .sign((signer as unknown as { keys: Map<string, { privateKey: KeyObject }> }).keys.get(kid)!.privateKey);
    expect(refused(await list(otherAudience))).toMatch(/not valid/);
  });

  it('lets a token act only for its own org, on every public subject', async () => {
    const mine = await client.tokenFor(org);
    const publicWithOrg = REQUESTS.filter(
      (d) => d.visibility === 'public' && 'org_id' in ((d.request as any).shape ?? {}),
    );
    expect(publicWithOrg.length).toBeGreaterThan(20);
    for (const d of publicWithOrg) {
      const subject = d.subject;
      const token = subject.startsWith('toolplane.v1.auth.')
        ? (await client.mint(org, { scopes: ['admin', 'tools:read'] })).token
        : mine;
      const r = await client.req(subject, { org_id: other }, { token });
      expect([subject, r.error?.code]).toEqual([subject, 'FORBIDDEN']);
    }
    // And nothing of the other org changed or leaked: it still has no tools.
    expect((await list(await client.tokenFor(other), other)).tools).toEqual([]);
  });

  it("needs the subject's scope; an operator token works only on toolplane.v1.auth.*", async () => {
    const reader = (await client.mint(org, { scopes: ['tools:read'] })).token;
    expect((await list(reader)).tools).toEqual([]);
    expect(
      refused(
        await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: ADD } }, { token: reader }),
        'FORBIDDEN',
      ),
    ).toMatch(/scope tools:write/);
    expect(
      refused(
        await client.req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'add', args: {} }, { token: reader }),
        'FORBIDDEN',
      ),
    ).toMatch(/tools:execute/);
    expect(
      refused(await client.req('toolplane.v1.secrets.list', { org_id: org }, { token: reader }), 'FORBIDDEN'),
    ).toMatch(/secrets:read/);
    const operator = process.env.TOOLPLANE_TEST_OPERATOR_TOKEN!;
    expect(refused(await list(operator), 'FORBIDDEN')).toMatch(/operator token is accepted on toolplane.v1.auth/);
  });

  it('mints a token once, lists only metadata, and a revoked token is refused by every service', async () => {
    const minted = await client.mint(org, { name: 'ci runner', ttl_s: 3600 });
    expect(minted).toMatchObject({
      token_id: expect.stringMatching(/^tok-/),
      scopes: ['tools:read', 'tools:write', 'tools:execute', 'secrets:read', 'secrets:write', 'mcp:read', 'mcp:write'],
    });
    const listed = await client.req('toolplane.v1.auth.tokens.list', { org_id: org });
    const row = listed.tokens.find((t: any) => t.token_id === minted.token_id);
    expect(row).toMatchObject({ name: 'ci runner', org_id: org, revoked_at: null, key_id: 'test' });
    expect(JSON.stringify(listed)).not.toContain(minted.token);

    const asks: Array<[string, Record<string, unknown>]> = [
      ['toolplane.v1.tools.list', { org_id: org }],
      ['toolplane.v1.schemas.validate', { json_schema: { name: 'f', parameters: { type: 'object', properties: {} } } }],
      ['toolplane.v1.secrets.list', { org_id: org }],
      ['toolplane.v1.tools.execute', { org_id: org, tool_name: 'nothing_here', args: {} }],
      ['toolplane.v1.mcp.servers.list', { org_id: org }],
    ];
    const codes = async () =>
      Promise.all(asks.map(async ([s, b]) => (await client.req(s, b, { token: minted.token })).error?.code ?? 'ok'));
    expect(await codes()).toEqual(['ok', 'ok', 'ok', 'TOOL_NOT_FOUND', 'ok']);
    expect(await client.req('toolplane.v1.auth.tokens.revoke', { org_id: org, token_id: minted.token_id })).toEqual({
      revoked: true,
    });
    // Every service learns it (a broadcast, and each fetches the state every AUTH_REFRESH_MS anyway).
    await expectEventually(async () => expect(await codes()).toEqual(Array(asks.length).fill('UNAUTHENTICATED')), {
      timeoutMs: 20_000,
      intervalMs: 50,
    });
    expect(
      (await client.req('toolplane.v1.auth.tokens.list', { org_id: org })).tokens.find(
        (t: any) => t.token_id === minted.token_id,
      ).revoked_at,
    ).not.toBeNull();
    // Revoking twice is fine; a token of another org is not found from here.
    expect(await client.req('toolplane.v1.auth.tokens.revoke', { org_id: org, token_id: minted.token_id })).toEqual({
      revoked: true,
    });
    const theirs = await client.mint(other);
    expect(
      (await client.req('toolplane.v1.auth.tokens.revoke', { org_id: org, token_id: theirs.token_id })).error.code,
    ).toBe('TOKEN_NOT_FOUND');
    expect((await list(theirs.token, other)).tools).toEqual([]);
  });

  it('lets an org admin mint tokens only with scopes it holds, only for its org', async () => {
    const admin = (await client.mint(org, { scopes: ['admin', 'tools:read'] })).token;
    const minted = await client.req(
      'toolplane.v1.auth.tokens.create',
      { org_id: org, name: 'reader' },
      { token: admin },
    );
    expect(minted.scopes).toEqual(['tools:read']);
    expect((await list(minted.token)).tools).toEqual([]);
    const wider = await client.req(
      'toolplane.v1.auth.tokens.create',
      { org_id: org, name: 'writer', scopes: ['tools:write'] },
      { token: admin },
    );
    expect(refused(wider, 'FORBIDDEN')).toMatch(/only scopes it holds: not tools:write/);
    expect(
      refused(
        await client.req('toolplane.v1.auth.tokens.create', { org_id: other, name: 'x' }, { token: admin }),
        'FORBIDDEN',
      ),
    ).toMatch(/another org/);
    expect(
      refused(await client.req('toolplane.v1.auth.orgs.delete', { org_id: org }, { token: admin }), 'FORBIDDEN'),
    ).toMatch(/platform operator/);
    // Without the admin scope, no token subject at all.
    expect(
      refused(await client.req('toolplane.v1.auth.tokens.list', { org_id: org }, { token: minted.token }), 'FORBIDDEN'),
    ).toMatch(/scope admin/);
  });

  it('ends every token of a deleted org and mints none for it', async () => {
    const doomed = uniqueOrg('doomed');
    const token = await client.tokenFor(doomed);
    expect((await list(token, doomed)).tools).toEqual([]);
    const del = await client.req('toolplane.v1.auth.orgs.delete', { org_id: doomed });
    expect(del).toEqual({ deleted: true, tokens_revoked: 1 });
    await expectEventually(async () => expect(refused(await list(token, doomed))).toMatch(/revoked|deleted org/), {
      timeoutMs: 20_000,
      intervalMs: 50,
    });
    // A token signed before the deletion but never recorded (e.g. minted offline) is refused too.
    const offline = await new TokenSigner(ring()).sign({
      jti: 'tok-00000000-0000-4000-8000-0000000000ff',
      org: doomed,
      scopes: ['tools:read'],
      issuedAt: new Date(),
      expiresAt: new Date(Date.now() + 3600_000),
    });
    expect(refused(await list(offline, doomed))).toMatch(/deleted org/);
    expect(
      refused(await client.req('toolplane.v1.auth.tokens.create', { org_id: doomed, name: 'again' }), 'FORBIDDEN'),
    ).toMatch(/has been deleted/);
  });
});
