/**
 * The README's example: register a Python function and run it, with nothing but a NATS client and
 * an org token (TOOLPLANE_TOKEN, or one minted for org `acme` with the development admin token).
 * `node dist/tools/dev/example.js` against a running stack.
 */
import { connect, headers } from '@nats-io/transport-node';
import { Headers } from '@toolplane/contracts';
import { mintOrgToken } from './dev-auth';

const source = `def add(a: int, b: int = 2) -> int:
    """Add two integers.

    Args:
        a (int): The first number.
        b (int): The second number.
    """
    print(f"adding {a} and {b}")
    return a + b
`;

async function main(): Promise<void> {
  const nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
  const token =
    process.env.TOOLPLANE_TOKEN ?? (await mintOrgToken(nc, 'acme', { name: 'npm run example', ttl_s: 3600 })).token;
  const ask = async (subject: string, body: unknown) => {
    const h = headers();
    h.set(Headers.AUTHORIZATION, `Bearer ${token}`);
    return (await nc.request(subject, JSON.stringify(body), { timeout: 30_000, headers: h })).json();
  };
  const upserted = await ask('toolplane.v1.tools.upsert', { org_id: 'acme', tool: { source_code: source } });
  process.stdout.write(`${JSON.stringify(upserted, null, 2)}\n`);
  const result = await ask('toolplane.v1.tools.execute', { org_id: 'acme', tool_name: 'add', args: { a: 40 } });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  await nc.close();
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exit(1);
});
