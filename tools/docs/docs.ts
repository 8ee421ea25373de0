import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { publicJsonSchemas } from '@toolplane/contracts';
import { baseEnvShape } from '@toolplane/platform';
import { appConfigDoc, commonConfigDoc, configuredApps, envShapeOf } from './config.doc';
import { errorCodesDoc } from './error-codes.doc';
import { withBlock } from './markdown';
import { subjectsDoc } from './subjects.doc';

/** Loads an app's config module (from source in tests, from dist in the script). */
export type ConfigLoader = (app: string) => Record<string, unknown>;

/**
 * Loads a config module with `os.tmpdir()` answering the text `$TMPDIR`: a default made of it at
 * load (RUNNER_WORK_ROOT, MCP_STDIO_WORK_ROOT) then reads the same on every machine. (Patching the
 * function, not the TMPDIR variable: a jest sandbox's process.env is not the one node:os reads.)
 */
function loadPortably(load: ConfigLoader, app: string): Record<string, unknown> {
  const tmpdir = os.tmpdir;
  os.tmpdir = () => '$TMPDIR';
  try {
    return load(app);
  } finally {
    os.tmpdir = tmpdir;
  }
}

const read = (root: string, file: string, skeleton: string): string =>
  existsSync(join(root, file)) ? readFileSync(join(root, file), 'utf8') : skeleton;

/**
 * Every page generated from the code, by path under the repository root, as it should read now:
 * docs/api/*.json (whole files), and the generated blocks of docs/public-api.md (error codes),
 * docs/subjects.md and docs/config/*.md (the rest of each page is hand-written and kept).
 */
export function generatedDocs(root: string, loadConfig: ConfigLoader): Map<string, string> {
  const out = new Map<string, string>();
  for (const [file, schema] of Object.entries(publicJsonSchemas()))
    out.set(`docs/api/${file}`, `${JSON.stringify(schema, null, 2)}\n`);

  const api = 'docs/public-api.md';
  out.set(
    api,
    withBlock(
      read(root, api, '# Public API\n'),
      'error-codes',
      errorCodesDoc(),
      '`ERROR_CODES` in libs/contracts/src/errors.ts',
    ),
  );

  const subjects = 'docs/subjects.md';
  const subjectsPage = read(
    root,
    subjects,
    '# Subjects\n\nEvery subject Toolplane serves or publishes, from the descriptors in `libs/contracts` (the only place a subject is written). Payloads: [public-api.md](public-api.md) and the JSON Schemas in [api/](api/).\n',
  );
  out.set(
    subjects,
    withBlock(
      subjectsPage,
      'subjects',
      subjectsDoc(),
      'the descriptors in libs/contracts/src/*.contract.ts (catalog.ts)',
    ),
  );

  const common = 'docs/config/common.md';
  const commonPage = read(
    root,
    common,
    "# Variables every app reads\n\nNATS, health, logs, service identity, token checks and OpenTelemetry: `baseEnvShape` in `libs/platform/src/env.ts`, which every app's env schema extends. What they are for and how they combine: [../configuration.md](../configuration.md).\n",
  );
  out.set(
    common,
    withBlock(commonPage, 'env', commonConfigDoc(root, baseEnvShape), '`baseEnvShape` in libs/platform/src/env.ts'),
  );

  for (const app of configuredApps(root)) {
    const file = `docs/config/${app}.md`;
    const skeleton = `# ${app}: environment variables\n\nEvery variable ${app} reads beyond the common ones, from its env schema (\`apps/${app}/src/${app}.config.ts\`), parsed once at start: an invalid value stops the app and is named. What they are for and how they combine: [../configuration.md](../configuration.md).\n`;
    const shape = envShapeOf(loadPortably(loadConfig, app), app);
    out.set(
      file,
      withBlock(
        read(root, file, skeleton),
        'env',
        appConfigDoc(root, app, shape, baseEnvShape as never),
        `apps/${app}/src/${app}.config.ts`,
      ),
    );
  }
  return out;
}
