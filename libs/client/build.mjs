// Builds the publishable @toolplane/client into dist/packages/client (package.json, README.md,
// dist/index.mjs, dist/index.d.mts): one ESM module (esbuild) and one declaration file (rollup +
// rollup-plugin-dts). libs/contracts is not published: its code and its declarations are bundled
// in (tree-shaken), so the package imports nothing but its dependencies.
// `npm run build:client`, then `npm pack dist/packages/client` (or `npm publish dist/packages/client`).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const pkgDir = join(root, 'dist', 'packages', 'client');
const out = join(pkgDir, 'dist');
const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
const entry = join(here, 'src', 'index.ts');
// Every import of a dependency (and its subpaths) stays an import; everything else is bundled.
const deps = Object.keys(pkg.dependencies ?? {});
const isExternal = (id) => deps.some((d) => id === d || id.startsWith(`${d}/`));
// Of libs/messaging the client takes only the event signature check (EventVerifier: contracts and
// crypto, no Nest): the package resolves @toolplane/messaging to that one module.
const eventSignature = join(root, 'libs', 'messaging', 'src', 'event-signature.ts');
const messagingEvents = {
  esbuild: {
    name: 'messaging-events',
    setup: (b) =>
      b.onResolve({ filter: /^@toolplane\/messaging(\/event-signature)?$/ }, () => ({ path: eventSignature })),
  },
  rollup: {
    name: 'messaging-events',
    resolveId: (id) =>
      id === '@toolplane/messaging' || id === '@toolplane/messaging/event-signature' ? eventSignature : null,
  },
};

rmSync(pkgDir, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

await build({
  entryPoints: [entry],
  outfile: join(out, 'index.mjs'),
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  external: deps,
  tsconfig: join(root, 'tsconfig.base.json'),
  legalComments: 'none',
  logLevel: 'warning',
  plugins: [messagingEvents.esbuild],
});

const bundle = await rollup({
  input: entry,
  external: isExternal,
  plugins: [
    messagingEvents.rollup,
    dts({ tsconfig: join(root, 'tsconfig.base.json'), compilerOptions: { types: ['node'] } }),
  ],
  onwarn(w, warn) {
    if (w.code !== 'CIRCULAR_DEPENDENCY') warn(w);
  },
});
await bundle.write({ file: join(out, 'index.d.mts'), format: 'es' });
await bundle.close();

// The package must not point at anything it does not ship.
for (const f of ['index.mjs', 'index.d.mts']) {
  const text = readFileSync(join(out, f), 'utf8');
  const leaked = [...text.matchAll(/from\s+['"](@toolplane\/[^'"]+|\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]);
  if (leaked.length) throw new Error(`${f} imports what the package does not ship: ${[...new Set(leaked)].join(', ')}`);
}
writeFileSync(join(pkgDir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
copyFileSync(join(here, 'README.md'), join(pkgDir, 'README.md'));
process.stdout.write(`built ${pkg.name}@${pkg.version} in ${pkgDir}\n`);
