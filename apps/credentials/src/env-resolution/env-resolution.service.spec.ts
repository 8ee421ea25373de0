import { RESERVED_ENV_NAMES } from '@toolplane/contracts';
import { newTestService, type TestService } from '@toolplane/testing';
import { CredentialsCache } from '../cache/credentials-cache';
import { SandboxConfigsService } from '../sandbox-configs/sandbox-configs.service';
import { SecretsService, type SecretValue } from '../secrets/secrets.service';
import { WebhooksService } from '../webhooks/webhooks.service';
import { EnvResolutionService } from './env-resolution.service';

const ORG = 'org-env';
const TOOL = 'tool-00000000-0000-4000-8000-0000000000e5';
const vars = (o: Record<string, string>, mask = true) =>
  new Map<string, SecretValue>(Object.entries(o).map(([k, value]) => [k, { value, mask }]));

/** The org's stores as the service sees them (typed fakes of its three collaborators). */
class Stores {
  sandbox: Record<string, Map<string, SecretValue>> = {};
  agent = new Map<string, SecretValue>();
  user: Record<string, Map<string, SecretValue>> = {};
  userReads: string[] = [];
  webhookUsers: Array<string | undefined> = [];
  webhook: Record<string, string> | null = null;
  defaultProvider = 'local';
  fallback: string[] = [];
  reads = 0;
}

describe('EnvResolutionService (alone: stores and webhook are fakes)', () => {
  let stores: Stores;
  let t: TestService<EnvResolutionService>;

  beforeEach(async () => {
    stores = new Stores();
    const secrets: Partial<SecretsService> = {
      sandboxValues: async (_org, provider) => (
        stores.reads++, { values: stores.sandbox[provider] ?? new Map(), rows: [] }
      ),
      agentValues: async () => stores.agent,
      userValues: async (_org, user) => (stores.userReads.push(user), stores.user[user] ?? new Map()),
    };
    const webhooks: Partial<WebhooksService> = {
      credentialsFor: async (ctx) => (stores.webhookUsers.push(ctx.userId), stores.webhook ?? {}),
      configured: async () => stores.webhook !== null,
    };
    const configs: Partial<SandboxConfigsService> = {
      defaultProvider: async () => stores.defaultProvider as never,
      resolvedFor: async () => ({ fingerprint: 'fp-1', settings: { fallback_providers: stores.fallback } as never }),
    };
    t = await newTestService(EnvResolutionService, {
      config: { CREDENTIALS_ENV_CACHE_TTL_MS: 60_000, CREDENTIALS_ENV_CACHE_MAX_ENTRIES: 100 },
      providers: [CredentialsCache],
      edges: [
        { provide: SecretsService, useValue: secrets },
        { provide: WebhooksService, useValue: webhooks },
        { provide: SandboxConfigsService, useValue: configs },
      ],
    });
  });
  afterEach(() => t.close());

  const resolve = (extra: Record<string, unknown> = {}) =>
    t.service.resolve({ org_id: ORG, tool_id: TOOL, tool_name: 'x', ...extra } as never);

  it('layers sandbox < webhook < agent < call < reserved ids, masking what a secret layer set', async () => {
    stores.sandbox.local = vars({ A: 'sandbox', B: 'sandbox', C: 'sandbox', D: 'sandbox' });
    stores.webhook = { B: 'webhook', C: 'webhook', D: 'webhook' };
    stores.agent = vars({ C: 'agent', D: 'agent' });
    const r = await resolve({ agent_id: 'agent-1', env: { D: 'call' } });
    expect(r.env).toMatchObject({
      A: 'sandbox',
      B: 'webhook',
      C: 'agent',
      D: 'call',
      TOOLPLANE_ORG_ID: ORG,
      TOOLPLANE_TOOL_ID: TOOL,
      TOOLPLANE_AGENT_ID: 'agent-1',
    });
    expect(r.masked_keys.sort()).toEqual(['A', 'B', 'C']); // the call's own env is not a secret of the org
  });

  it("puts the end user's secrets over the agent's and the webhook's, under the call's env; no user, no user layer", async () => {
    stores.sandbox.local = vars({ A: 'sandbox', B: 'sandbox', C: 'sandbox', D: 'sandbox' });
    stores.webhook = { B: 'webhook', C: 'webhook' };
    stores.agent = vars({ C: 'agent', D: 'agent' });
    stores.user = { alice: vars({ C: 'alice', D: 'alice', U: 'alice' }) };
    const r = await resolve({ agent_id: 'agent-1', user_id: 'alice', env: { D: 'call' } });
    expect(r.env).toMatchObject({ A: 'sandbox', B: 'webhook', C: 'alice', D: 'call', U: 'alice' });
    expect(r.masked_keys).toContain('U');
    expect(stores.webhookUsers).toEqual(['alice']);
    const none = await resolve({ agent_id: 'agent-1' });
    expect(none.env).toMatchObject({ C: 'agent', D: 'agent' });
    expect(none.env).not.toHaveProperty('U');
    expect(stores.userReads).toEqual(['alice']);
  });

  it("caches each user's secrets under that user: another user's call reads its own", async () => {
    stores.user = { alice: vars({ K: 'alice' }), bob: vars({ K: 'bob' }) };
    expect((await resolve({ user_id: 'alice' })).env.K).toBe('alice');
    expect((await resolve({ user_id: 'bob' })).env.K).toBe('bob');
    expect((await resolve({ user_id: 'alice' })).env.K).toBe('alice');
    expect((await resolve({})).env).not.toHaveProperty('K');
    expect(stores.userReads).toEqual(['alice', 'bob']);
  });

  it('never lets a layer set a reserved name, and the reserved ids always win', async () => {
    const reserved = Object.fromEntries(RESERVED_ENV_NAMES.map((n) => [n, 'forged']));
    stores.sandbox.local = vars(reserved);
    stores.webhook = reserved;
    const r = await resolve({ env: reserved });
    for (const n of RESERVED_ENV_NAMES) expect(r.env[n]).not.toBe('forged');
    expect(r.env.TOOLPLANE_ORG_ID).toBe(ORG);
  });

  it("takes the provider's own credentials out of the tool's env (the runner gets them, the tool never does)", async () => {
    stores.defaultProvider = 'e2b';
    stores.sandbox.e2b = vars({ E2B_API_KEY: 'e2b-key', OTHER: 'v' });
    const r = await resolve();
    expect(r.provider).toBe('e2b');
    expect(r.provider_credentials).toEqual({ E2B_API_KEY: 'e2b-key' });
    expect(r.env).not.toHaveProperty('E2B_API_KEY');
    expect(JSON.stringify(r.env)).not.toContain('e2b-key');
    expect(r.env.OTHER).toBe('v');
  });

  it('resolves for the provider asked for, lists only the other fallbacks, and lets the executor reuse the reply only without a webhook', async () => {
    stores.sandbox.modal = vars({ M: '1' });
    stores.fallback = ['modal', 'local'];
    const r = await resolve({ provider: 'modal' });
    expect(r).toMatchObject({
      provider: 'modal',
      fallback_providers: ['local'],
      env: { M: '1' },
      sandbox_config_fingerprint: 'fp-1',
      cache_ttl_ms: 60_000,
    });
    stores.webhook = {};
    expect((await resolve({ provider: 'modal' })).cache_ttl_ms).toBe(0);
  });

  it("reads the org's stored state once for concurrent calls, then from the cache", async () => {
    stores.sandbox.local = vars({ A: '1' });
    await Promise.all([resolve(), resolve(), resolve()]);
    await resolve();
    expect(stores.reads).toBe(1);
  });
});
