import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { publicJsonSchemas } from './json-schemas';

/** Writes docs/api/*.json from the contracts; the contract spec fails when they drift. */
const dir = join(process.cwd(), 'docs', 'api');
mkdirSync(dir, { recursive: true });
for (const [file, schema] of Object.entries(publicJsonSchemas())) {
  writeFileSync(join(dir, file), `${JSON.stringify(schema, null, 2)}\n`);
}
process.stdout.write(`wrote ${Object.keys(publicJsonSchemas()).length} schemas to ${dir}\n`);
