import { generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import type { AuthState } from '@toolplane/contracts';
import { TokenVerifier } from './token-verifier';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64url');

const sign = (claims: Record<string, unknown>, opts: { kid?: string; exp?: number; aud?: string } = {}) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'EdDSA', kid: opts.kid ?? 'k1' })
    .setIssuer('toolplane')
    .setAudience(opts.aud ?? 'toolplane')
    .setExpirationTime(opts.exp ?? Math.floor(Date.now() / 1000) + 600)
    .sign(privateKey);
const orgToken = (org: string, jti = 'tok-1', scope = 'tools:read') => sign({ org, sub: `org:${org}`, jti, scope });

describe('TokenVerifier', () => {
  let state: AuthState;
  let fetches: number;
  const sut = () =>
    new TokenVerifier(
      async (version) => {
        fetches++;
        return version === state.version ? { unchanged: true as const, version } : state;
      },
      { refreshMs: 60_000, maxStaleMs: 60_000, cacheMax: 100 },
    );
  beforeEach(() => {
    state = { version: '1', keys: { k1: raw }, revoked_tokens: [], deleted_orgs: [] };
    fetches = 0;
  });

  it('gives the org and scopes of a valid token, and verifies each token once', async () => {
    const v = sut();
    const token = await orgToken('acme', 'tok-1', 'tools:read tools:execute');
    const p = await v.verify([`Bearer ${token}`]);
    expect(p).toMatchObject({ kind: 'tenant', org: 'acme', tokenId: 'tok-1' });
    expect(p.kind === 'tenant' && [...p.scopes]).toEqual(['tools:read', 'tools:execute']);
    expect(await v.verify([`Bearer ${token}`])).toBe(p);
    expect(fetches).toBe(1);
  });

  it('gives the end user a token is bound to (its signed uid claim), and none for an org-wide token', async () => {
    const v = sut();
    const bound = await sign({
      org: 'acme',
      sub: 'org:acme',
      jti: 'tok-u',
      scope: 'tools:execute',
      uid: 'auth0|alice',
    });
    expect(await v.verify([`Bearer ${bound}`])).toMatchObject({ kind: 'tenant', org: 'acme', userId: 'auth0|alice' });
    expect(await v.verify([`Bearer ${await orgToken('acme')}`])).not.toHaveProperty('userId');
    const operator = await sign({ sub: 'operator', jti: 'tok-op', scope: 'admin', uid: 'alice' });
    await expect(v.verify([`Bearer ${operator}`])).rejects.toThrow('bound to no end user');
  });

  it('checks revocations, deleted orgs and the key ring on every request, cached or not', async () => {
    const v = sut();
    const token = await orgToken('acme', 'tok-9');
    await v.verify([`Bearer ${token}`]);
    state = { ...state, version: '2', revoked_tokens: ['tok-9'] };
    await v.refresh();
    await expect(v.verify([`Bearer ${token}`])).rejects.toThrow('The token has been revoked');
    state = { ...state, version: '3', revoked_tokens: [], deleted_orgs: ['acme'] };
    await v.refresh();
    await expect(v.verify([`Bearer ${token}`])).rejects.toThrow('deleted org');
    state = { ...state, version: '4', deleted_orgs: [], keys: {} };
    await v.refresh();
    await expect(v.verify([`Bearer ${token}`])).rejects.toThrow('no longer trusted');
  });

  it('refuses malformed headers and tokens with a typed, non-retryable error', async () => {
    const v = sut();
    const good = await orgToken('acme');
    const cases: Array<[string[], RegExp]> = [
      [[], /needs an org token/],
      [[`Bearer ${good}`, `Bearer ${good}`], /exactly one/],
      [[good], /not `Bearer <jwt>`/],
      [[`Bearer ${'x'.repeat(5000)}.y.z`], /longer than/],
      [
        [`Bearer ${await sign({ org: 'acme', sub: 'org:acme', jti: 't', scope: 'tools:read' }, { aud: 'other' })}`],
        /not valid/,
      ],
      [
        [
          `Bearer ${await sign({ org: 'acme', sub: 'org:acme', jti: 't', scope: 'tools:read' }, { exp: Math.floor(Date.now() / 1000) - 5 })}`,
        ],
        /expired/,
      ],
      [[`Bearer ${await sign({ org: 'acme', sub: 'org:acme', jti: 't', scope: 'root' })}`], /unknown scope/],
      [[`Bearer ${await sign({ org: 'acme', sub: 'org:other', jti: 't', scope: 'tools:read' })}`], /names no org/],
      [[`Bearer ${await sign({ sub: 'operator', jti: 't', scope: 'admin tools:read' })}`], /exactly the admin scope/],
      [
        [`Bearer ${await sign({ org: 'acme', sub: 'org:acme', jti: 't', scope: 'tools:read' }, { kid: 'k9' })}`],
        /unknown key/,
      ],
    ];
    for (const [values, message] of cases) {
      await expect(v.verify(values)).rejects.toMatchObject({
        code: 'UNAUTHENTICATED',
        retryable: false,
        message: expect.stringMatching(message),
      });
    }
  });

  it('asks again for a key it does not know yet (a key added to the ring)', async () => {
    const v = sut();
    const other = generateKeyPairSync('ed25519');
    await v.verify([`Bearer ${await orgToken('acme')}`]);
    const token = await new SignJWT({ org: 'acme', sub: 'org:acme', jti: 'tok-2', scope: 'tools:read' })
      .setProtectedHeader({ alg: 'EdDSA', kid: 'k2' })
      .setIssuer('toolplane')
      .setAudience('toolplane')
      .setExpirationTime('10m')
      .sign(other.privateKey);
    state = {
      ...state,
      version: '2',
      keys: { k1: raw, k2: other.publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64url') },
    };
    expect(await v.verify([`Bearer ${token}`])).toMatchObject({ org: 'acme' });
  });

  it('answers SERVICE_UNAVAILABLE (retryable) when the state cannot be fetched at all', async () => {
    const v = new TokenVerifier(() => Promise.reject(new Error('no credentials service')), {
      refreshMs: 60_000,
      maxStaleMs: 60_000,
      cacheMax: 10,
    });
    await expect(v.verify([`Bearer ${await orgToken('acme')}`])).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      retryable: true,
    });
  });
});
