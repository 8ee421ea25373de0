/**
 * `npm run token -- --org acme [--scopes tools:read,tools:execute] [--ttl 3600] [--name NAME]`:
 * prints a new token for the org (minted with the development admin token of `npm start`), and
 * nothing else on stdout, so `export TOOLPLANE_TOKEN=$(npm run -s token -- --org acme)` works.
 */
import { connect } from '@nats-io/transport-node';
import { mintOrgToken } from './dev-auth';

async function main(argv: string[]): Promise<void> {
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const org = value('--org');
  if (!org) throw new Error('usage: npm run token -- --org <org_id> [--scopes a,b] [--ttl seconds] [--name name]');
  const nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
  try {
    const ttl = value('--ttl');
    const minted = await mintOrgToken(nc, org, {
      name: value('--name') ?? 'npm run token',
      scopes: value('--scopes')?.split(','),
      ...(ttl ? { ttl_s: Number(ttl) } : {}),
    });
    process.stderr.write(
      `token ${minted.token_id} for org ${org} (${minted.scopes.join(' ')}), expires ${minted.expires_at}\n`,
    );
    process.stdout.write(`${minted.token}\n`);
  } finally {
    await nc.close();
  }
}

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exit(1);
});
