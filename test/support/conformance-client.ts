/**
 * The command the official MCP conformance suite runs in `client` mode
 * (`conformance client --command "node dist/test/support/conformance-client.js" ...`): it drives
 * Toolplane's mcp-sync — the client under test — over NATS, against the suite's server whose URL is
 * the last argument. It does none of the client's work: it registers the server through the public
 * API (`mcp.servers.add`) with what the scenario's context gives an operator (a pre-registered
 * client, client credentials, a private key as an org secret), plays the human who opens the
 * authorization URL and hands the code back (`mcp.oauth.complete`), and calls the scenario's tool
 * through `tools.execute`. Exit 0 when every step answered as expected.
 *
 * Env: MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_CONTEXT (the suite), TOOLPLANE_TEST_PREFIX and the
 * test identity (the test run).
 */
import { randomBytes } from 'node:crypto';
import { RawClient } from './nats-client';

const TIMEOUT_MS = 25_000;

interface Context {
  client_id?: string;
  client_secret?: string;
  private_key_pem?: string;
  signing_algorithm?: string;
}

/** What a scenario's server asks of its client after connecting: the tool it must call, with its args. */
const CALLS: Record<string, { tool: string; args: Record<string, unknown> }> = {
  tools_call: { tool: 'add_numbers', args: { a: 2, b: 3 } },
  'sse-retry': { tool: 'test_reconnection', args: {} },
  'auth/scope-step-up': { tool: 'test-tool', args: {} },
};

/** How many times the human opens an authorization URL for one step (an add, then a step-up, say). */
const HUMAN_ROUNDS = 2;

async function main(): Promise<void> {
  const url = process.argv[process.argv.length - 1]!;
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as Context;
  const prefix = process.env.TOOLPLANE_TEST_PREFIX;
  if (!prefix) throw new Error('TOOLPLANE_TEST_PREFIX is not set (run from the test suite)');
  const org = `conf-${randomBytes(4).toString('hex')}`;
  const client = await RawClient.connect(prefix);
  try {
    const req = (subject: string, body: unknown) => client.req(subject, body, { timeoutMs: TIMEOUT_MS });
    const auth = await authFor(scenario, context, (key, value) =>
      req('toolplane.v1.secrets.set', { org_id: org, scope: 'sandbox', key, value }),
    );
    /**
     * Runs a step; while Toolplane answers that a user must authorize (the add's authorization URL,
     * or MCP_AUTHORIZATION_REQUIRED for a step-up or a refused refresh), the human opens the URL and
     * hands the code back; the step is then run again — at most HUMAN_ROUNDS times.
     */
    const withHuman = async (step: () => Promise<any>): Promise<any> => {
      let r = await step();
      for (let round = 0; round < HUMAN_ROUNDS; round++) {
        const authz =
          r?.authorization ?? (r?.error?.code === 'MCP_AUTHORIZATION_REQUIRED' ? r.error.details : undefined);
        if (!authz) return r;
        const code = await authorize(authz.authorization_url as string);
        const done = await req('toolplane.v1.mcp.oauth.complete', {
          org_id: org,
          state: code.state ?? authz.state,
          code: code.code,
        });
        if (r.authorization || done.error) r = done;
        else r = await step();
      }
      return r;
    };
    const name = `conf-${scenario.replace(/[^A-Za-z0-9_.-]/g, '-')}`.slice(0, 64);
    const r = await withHuman(() =>
      req('toolplane.v1.mcp.servers.add', {
        org_id: org,
        server: { name, transport: 'streamable_http', url, ...(auth ? { auth } : {}) },
      }),
    );
    if (r.error) throw new Error(`${r.error.code}: ${r.error.message}`);
    log(`added ${name}: ${JSON.stringify(r.sync)}`);
    try {
      const call = CALLS[scenario];
      if (call) {
        const out = await withHuman(() =>
          req('toolplane.v1.tools.execute', { org_id: org, tool_name: call.tool, args: call.args, timeout_ms: 20_000 }),
        );
        if (out.error || out.status !== 'success')
          throw new Error(`tools.execute ${call.tool}: ${JSON.stringify(out.error ?? out)}`);
        log(`${call.tool} → ${JSON.stringify(out.func_return)}`);
      }
    } finally {
      // Removing the server closes mcp-sync's sessions to it (the suite's server waits for them to end).
      await req('toolplane.v1.mcp.servers.remove', { org_id: org, name });
    }
  } finally {
    await client.close();
  }
}

/** The auth an operator would configure for the scenario: nothing but `oauth` unless the scenario hands out credentials. */
async function authFor(
  scenario: string,
  c: Context,
  setSecret: (key: string, value: string) => Promise<any>,
): Promise<Record<string, unknown> | undefined> {
  if (!scenario.startsWith('auth/')) return undefined;
  if (scenario === 'auth/client-credentials-jwt') {
    const r = await setSecret('CONFORMANCE_PRIVATE_KEY', c.private_key_pem!);
    if (r?.error) throw new Error(JSON.stringify(r.error));
    return {
      type: 'oauth',
      grant_type: 'client_credentials',
      client_id: c.client_id,
      private_key: '{{CONFORMANCE_PRIVATE_KEY}}',
      signing_alg: c.signing_algorithm ?? 'ES256',
    };
  }
  if (scenario === 'auth/client-credentials-basic')
    return { type: 'oauth', grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret };
  if (c.client_id)
    return { type: 'oauth', client_id: c.client_id, ...(c.client_secret ? { client_secret: c.client_secret } : {}) };
  return { type: 'oauth' };
}

/** Opens the authorization URL as a browser would (the suite's server approves at once) and reads the code off the redirect. */
async function authorize(authorizationUrl: string): Promise<{ code: string; state?: string }> {
  const res = await fetch(authorizationUrl, { redirect: 'manual' });
  const location = res.headers.get('location');
  if (!location) throw new Error(`the authorization URL answered ${res.status} without a redirect`);
  const back = new URL(location, authorizationUrl);
  const code = back.searchParams.get('code');
  if (!code) throw new Error(`the redirect carries no code: ${back.search}`);
  return { code, ...(back.searchParams.get('state') ? { state: back.searchParams.get('state')! } : {}) };
}

function log(s: string): void {
  process.stderr.write(`[conformance-client] ${s}\n`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    log(`failed: ${(e as Error)?.stack ?? String(e)}`);
    process.exit(1);
  },
);
