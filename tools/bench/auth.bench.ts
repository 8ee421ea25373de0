/**
 * `npm run bench:auth`: what the trust boundary costs per message, in process (no NATS), beside
 * the work the edge did before it existed (decode + contract check of the same request).
 * - a public request with an org token already verified (the steady state: a cache hit checked
 *   against revocations, deleted orgs and the key ring), and one seen for the first time (an
 *   Ed25519 signature check through jose);
 * - a service request sealed and opened (X25519 pairwise key, per-message key, AES-256-GCM), and
 *   its reply, for a 1 KiB and a 64 KiB body.
 * BENCH_N (default 100000) iterations of the fast cases.
 */
import { headers, type Msg } from '@nats-io/transport-node';
import { SignJWT } from 'jose';
import { generateKeyPairSync } from 'node:crypto';
import { LocalRunnerRun, ToolsList, type AppName } from '@toolplane/contracts';
import { generateX25519, x25519FromSeed, x25519PublicKey } from '@toolplane/crypto';
import { decodeJson, EdgeAuth, parseContract, ServiceSealer, TokenVerifier } from '@toolplane/messaging';

const N = Number(process.env.BENCH_N ?? 100_000);

async function perOp(n: number, fn: () => unknown, warm = Math.min(n, 2000)): Promise<number> {
  for (let i = 0; i < warm; i++) await fn(); // warm the JIT
  const t = performance.now();
  for (let i = 0; i < n; i++) await fn();
  return ((performance.now() - t) * 1000) / n;
}

async function main(): Promise<void> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64url');
  const token = (jti: string) =>
    new SignJWT({ org: 'acme', scope: 'tools:read tools:write tools:execute' })
      .setProtectedHeader({ alg: 'EdDSA', kid: 'k1' })
      .setIssuer('toolplane')
      .setAudience('toolplane')
      .setSubject('org:acme')
      .setJti(jti)
      .setExpirationTime('1h')
      .sign(privateKey);
  const state = {
    version: '1',
    keys: { k1: raw },
    revoked_tokens: Array.from({ length: 1000 }, (_, i) => `tok-revoked-${i}`),
    deleted_orgs: ['gone'],
  };
  const verifier = new TokenVerifier(async () => state, { refreshMs: 60_000, maxStaleMs: 60_000, cacheMax: 10_000 });
  const ids = Object.fromEntries((['executor', 'runner-local'] as AppName[]).map((a) => [a, generateX25519()]));
  const peers = { get: (a: AppName) => (ids[a] ? x25519PublicKey(ids[a].publicKey) : undefined) };
  const sealer = (a: AppName) => new ServiceSealer(a, x25519FromSeed(ids[a]!.seed).privateKey, peers);
  const edge = new EdgeAuth(sealer('runner-local'), verifier);

  const body = new TextEncoder().encode(JSON.stringify({ org_id: 'acme', tags: ['a', 'b'], limit: 50 }));
  const h = headers();
  h.set('authorization', `Bearer ${await token('tok-bench')}`);
  const msg = { data: body, headers: h } as unknown as Msg;

  const baseline = await perOp(N, () => parseContract(ToolsList.request, decodeJson(body), 'Request'));
  const cached = await perOp(N, async () => {
    const a = await edge.admit(ToolsList, msg);
    const json = decodeJson(a.body);
    EdgeAuth.checkOrg(a.principal, json);
    parseContract(ToolsList.request, json, 'Request');
  });
  const tokens = await Promise.all(Array.from({ length: 2000 }, (_, i) => token(`tok-cold-${i}`)));
  let next = 0;
  const cold = await perOp(tokens.length, () => verifier.verify([`Bearer ${tokens[next++]}`]), 0);

  const executor = sealer('executor');
  const runner = sealer('runner-local');
  const seal = (size: number) => {
    const payload = new Uint8Array(size).fill(120);
    return () => {
      const s = executor.sealRequest(LocalRunnerRun.subject, 'runner-local', payload);
      const o = runner.openRequest(LocalRunnerRun.subject, s.header, s.data);
      const r = runner.sealReply(LocalRunnerRun.subject, 'executor', o.nonce, payload);
      executor.openReply(LocalRunnerRun.subject, 'runner-local', s.nonce, r.header, r.data);
    };
  };
  const seal1k = await perOp(Math.min(N, 50_000), seal(1024));
  const seal64k = await perOp(Math.min(N, 5000), seal(64 * 1024));

  const f = (us: number) => `${us.toFixed(2).padStart(9)} µs`;
  process.stdout.write(`\nToolplane trust-boundary benchmark (${new Date().toISOString()}, in process)\n`);
  process.stdout.write(`baseline: decode + contract check of a tools.list request   ${f(baseline)}\n`);
  process.stdout.write(
    `the same with the edge check, token verified before (cached)  ${f(cached)}   (+${(cached - baseline).toFixed(2)} µs over the baseline)\n`,
  );
  process.stdout.write(`public request, token never seen (Ed25519 signature, jose)   ${f(cold)}\n`);
  process.stdout.write(`service request + reply sealed and opened, 1 KiB each        ${f(seal1k)}\n`);
  process.stdout.write(`service request + reply sealed and opened, 64 KiB each       ${f(seal64k)}\n`);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
