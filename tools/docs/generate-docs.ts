import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generatedDocs } from './docs';

/**
 * `npm run docs` (also `npm run api:docs`): writes every page generated from the code (docs/api,
 * the error codes of docs/public-api.md, docs/subjects.md, docs/config/*.md); tools/docs/docs.spec.ts
 * fails when one is stale. Run from the repository root, after `npm run build`.
 */
const root = process.cwd();
const pages = generatedDocs(root, (app) =>
  require(join(__dirname, '..', '..', 'apps', app, 'src', `${app}.config.js`)),
);
for (const [file, text] of pages) {
  mkdirSync(dirname(join(root, file)), { recursive: true });
  writeFileSync(join(root, file), text);
}
process.stdout.write(`wrote ${pages.size} generated pages under ${join(root, 'docs')}\n`);
