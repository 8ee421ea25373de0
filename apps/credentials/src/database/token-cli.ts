/**
 * Platform operator tokens, from the key ring itself (no running service needed):
 *
 *   node dist/apps/credentials/src/database/token-cli.js operator [--name NAME] [--ttl-days N] [--out FILE]
 *   node dist/apps/credentials/src/database/token-cli.js revoke <token_id>
 *
 * `operator` prints the token (or writes it to FILE, mode 0600, never over an existing file). An
 * operator token may call only toolplane.v1.auth.* (mint, list and revoke org tokens, delete an
 * org). Reads CREDENTIALS_KEYS(_FILE) and DATABASE_URL like the credentials service.
 */
import { dataSourceOptions } from '@toolplane/platform';
import { writeFileSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { loadCredentialsConfig } from '../credentials.config';
import { loadKeyRing } from '../crypto/key-ring';
import { AuthRepository } from '../auth/auth.repository';
import { TokenMinter } from '../auth/token-minter';
import { TokenSigner } from '../auth/token-signer';
import { CREDENTIALS_DB } from './data-source';

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

async function run(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  if (command !== 'operator' && command !== 'revoke')
    throw new Error('usage: token-cli operator [--name NAME] [--ttl-days N] [--out FILE] | revoke <token_id>');
  const config = loadCredentialsConfig();
  const ds = new DataSource(dataSourceOptions(CREDENTIALS_DB, config.DATABASE_URL, 2));
  await ds.initialize();
  try {
    const repo = new AuthRepository(ds);
    if (command === 'revoke') {
      const token = args[0] ? await repo.find(args[0]) : null;
      if (!token) throw new Error(`no token ${args[0] ?? '(none given)'}`);
      process.stdout.write((await repo.revoke(token)) ? `revoked ${token.id}\n` : `${token.id} was already revoked\n`);
      return;
    }
    const days = Number(option(args, '--ttl-days') ?? '365');
    if (!Number.isInteger(days) || days < 1 || days > 365) throw new Error('--ttl-days: 1 to 365');
    const minted = await new TokenMinter(repo, new TokenSigner(loadKeyRing(config))).mint({
      name: option(args, '--name') ?? 'operator',
      scopes: ['admin'],
      ttlS: days * 24 * 3600,
      createdBy: 'cli',
    });
    const out = option(args, '--out');
    if (out) {
      writeFileSync(out, `${minted.token}\n`, { mode: 0o600, flag: 'wx' });
      process.stdout.write(`operator token ${minted.token_id} written to ${out} (expires ${minted.expires_at})\n`);
    } else {
      process.stdout.write(`${minted.token}\n`);
    }
  } finally {
    await ds.destroy();
  }
}

run(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`token-cli: ${(e as Error).message}\n`);
  process.exit(1);
});
