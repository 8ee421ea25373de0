import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/env';

/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json)
 * in `client` mode, with Toolplane's mcp-sync as the client under test: for each scenario the suite
 * starts its own MCP server (and authorization server) and runs test/support/conformance-client.ts
 * with its URL; that driver only registers the server through the public NATS API, plays the human
 * who opens the authorization URL, and calls the scenario's tool. The suite's own checks decide
 * (a FAILURE or a WARNING fails the scenario); the CLI exits non-zero then.
 */
const SCENARIOS = [
  'initialize',
  'tools_call',
  'sse-retry',
  // Discovery: Protected Resource Metadata from the 401 or the well-known paths, RFC 8414 / OpenID metadata variants.
  'auth/metadata-default',
  'auth/metadata-var1',
  'auth/metadata-var2',
  'auth/metadata-var3',
  'auth/2025-03-26-oauth-metadata-backcompat',
  'auth/2025-03-26-oauth-endpoint-fallback',
  // Registration: Client ID Metadata Documents, Dynamic Client Registration (the metadata scenarios), pre-registration.
  'auth/basic-cimd',
  'auth/pre-registration',
  // Scopes.
  'auth/scope-from-www-authenticate',
  'auth/scope-from-scopes-supported',
  'auth/scope-omitted-when-undefined',
  'auth/scope-step-up',
  'auth/scope-retry-limit',
  'auth/offline-access-scope',
  'auth/offline-access-not-supported',
  // Token-endpoint client authentication (these check RFC 8707 `resource` in both requests too).
  'auth/token-endpoint-auth-basic',
  'auth/token-endpoint-auth-post',
  'auth/token-endpoint-auth-none',
  // Client credentials: HTTP Basic and private_key_jwt (the key from the org's secrets).
  'auth/client-credentials-basic',
  'auth/client-credentials-jwt',
  // A Protected Resource Metadata that names another server: no authorization request is made.
  'auth/resource-mismatch',
];

/**
 * Not run, and why:
 * - elicitation-sep1034-client-defaults: the server asks the user a question in the middle of a
 *   tool call; Toolplane calls tools for agents with no user session to answer it (mcp-sync
 *   declares no elicitation capability), so there is nothing to conform to.
 * - auth/cross-app-access-complete-flow: enterprise IdP token exchange (RFC 8693, ID-JAG), an
 *   extension outside what Toolplane supports.
 */

const CONCURRENCY = 4;
const SCENARIO_TIMEOUT_MS = 60_000;

interface Outcome {
  scenario: string;
  code: number | null;
  failures: string[];
  output: string;
}

function runScenario(scenario: string, outDir: string): Promise<Outcome> {
  const cli = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
  const driver = `${process.execPath} ${join(ROOT, 'dist', 'test', 'support', 'conformance-client.js')}`;
  return new Promise((resolve) => {
    // The suite's CLI needs a recent Node: the one running the tests.
    const p = spawn(
      process.execPath,
      [
        cli,
        'client',
        '--command',
        driver,
        '--scenario',
        scenario,
        '--timeout',
        String(SCENARIO_TIMEOUT_MS - 10_000),
        '-o',
        outDir,
      ],
      {
        env: process.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    p.stdout.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
    p.stderr.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
    // A scenario that does not end is a failure of its own, not a hung suite.
    const killer = setTimeout(() => p.kill('SIGKILL'), SCENARIO_TIMEOUT_MS + 30_000);
    // 'close', not 'exit': the process can exit before its output is read to the end, and the
    // result line is the last thing it prints.
    p.once('close', (code) => {
      clearTimeout(killer);
      resolve({ scenario, code, failures: failedChecks(outDir, scenario), output });
    });
  });
}

/** FAILURE and WARNING checks of the scenario's checks.json (the suite writes one per run). */
function failedChecks(outDir: string, scenario: string): string[] {
  const dir = join(outDir, ...scenario.split('/').slice(0, -1));
  const base = scenario.split('/').pop()!;
  let runs: string[] = [];
  try {
    runs = readdirSync(dir).filter((d) => d.startsWith(`${base}-`) && statSync(join(dir, d)).isDirectory());
  } catch {
    return ['no results were written'];
  }
  const failures: string[] = [];
  for (const run of runs) {
    try {
      const checks = JSON.parse(readFileSync(join(dir, run, 'checks.json'), 'utf8')) as Array<{
        id: string;
        status: string;
        errorMessage?: string;
        description?: string;
      }>;
      for (const c of checks)
        if (c.status === 'FAILURE' || c.status === 'WARNING')
          failures.push(`${c.status} ${c.id}: ${c.errorMessage ?? c.description ?? ''}`);
    } catch (e) {
      failures.push(`unreadable checks.json: ${(e as Error).message}`);
    }
  }
  return failures;
}

describe('MCP conformance suite (client scenarios, mcp-sync as the client)', () => {
  const outDir = mkdtempSync(join(tmpdir(), 'tp-conformance-'));
  const outcomes = new Map<string, Promise<Outcome>>();

  beforeAll(() => {
    // Scenarios are independent (each has its own servers on port 0): a few at a time.
    let next = 0;
    const slots: Array<Promise<void>> = [];
    const waiting = new Map<string, (o: Outcome) => void>();
    for (const s of SCENARIOS) outcomes.set(s, new Promise((r) => waiting.set(s, r)));
    for (let i = 0; i < CONCURRENCY; i++) {
      slots.push(
        (async () => {
          while (next < SCENARIOS.length) {
            const s = SCENARIOS[next++]!;
            waiting.get(s)!(await runScenario(s, outDir));
          }
        })(),
      );
    }
  });

  afterAll(() => {
    rmSync(outDir, { recursive: true, force: true });
  });

  it.each(SCENARIOS)(
    '%s',
    async (scenario) => {
      const o = await outcomes.get(scenario)!;
      const report = `${o.failures.join('\n')}\n--- output ---\n${o.output.replace(/\x1b\[[0-9;]*m/g, '').slice(-4000)}`;
      expect({ scenario, exit: o.code, failures: o.failures }).toEqual({ scenario, exit: 0, failures: [] });
      expect(report).toContain('OVERALL: PASSED');
    },
    300_000,
  );
});
