import { dataSourceOptions } from '@toolplane/platform';
import { DataSource } from 'typeorm';
import { loadCredentialsConfig } from '../credentials.config';
import { loadKeyRing } from '../crypto/key-ring';
import { SecretBox } from '../crypto/secret-box';
import { CREDENTIALS_DB } from './data-source';
import { rotateKeys } from './key-rotation';

/**
 * `npm run rotate-keys` (node dist/apps/credentials/src/database/rotate-keys.js): re-encrypt every
 * stored value under CREDENTIALS_ACTIVE_KEY. Run it with the new key active and the old keys still
 * in the ring; once it reports nothing failed, the old keys can be removed.
 */
async function run(): Promise<void> {
  const config = loadCredentialsConfig();
  const box = new SecretBox(loadKeyRing(config));
  const ds = new DataSource(dataSourceOptions(CREDENTIALS_DB, config.DATABASE_URL, 2));
  await ds.initialize();
  try {
    const r = await rotateKeys(ds, box);
    process.stdout.write(
      `credentials: re-encrypted ${r.secrets} secret(s), ${r.webhooks} webhook signing secret(s) and ${r.oauthTokens} MCP OAuth token record(s) under key '${r.activeKeyId}'\n`,
    );
    for (const f of r.failed) process.stderr.write(`credentials: ${f.table} ${f.id} not rotated: ${f.reason}\n`);
    if (r.failed.length) process.exitCode = 2;
  } finally {
    await ds.destroy();
  }
}

run().catch((e) => {
  process.stderr.write(`credentials key rotation failed: ${(e as Error).message}\n`);
  process.exit(1);
});
