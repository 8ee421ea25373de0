/**
 * Service identities: one X25519 key per app (it seals and opens that app's messages; the app's
 * Ed25519 event signing key is derived from it) and every app's public keys (`<app>.pub`, and
 * `<app>.sign.pub`: what every consumer of events, the CLI and agent runtimes included, verifies
 * the app's events with).
 *
 *   node dist/tools/deploy/service-keys.js --dir DIR
 *       writes DIR/<app>.key (0600), DIR/<app>.pub and DIR/<app>.sign.pub for every app (keeps keys already there):
 *       a SERVICE_KEYS_DIR for a single host or docker compose.
 *   node dist/tools/deploy/service-keys.js --kubernetes [--namespace NS]
 *       prints, for `kubectl apply -f -`, a Secret toolplane-identity-<app> per app (its key only)
 *       and the ConfigMap toolplane-service-keys (every public key) that deploy/base mounts.
 *
 * Rotating an app's key: generate a new one; list both event keys in its `<app>.sign.pub` (old and new,
 * one a line: consumers accept either), update its `<app>.pub`, its Secret and the ConfigMap, restart
 * every app; drop the old event key once no replica signs with it.
 */
import { APP_NAMES } from '@toolplane/contracts';
import { eventSigningKey, generateX25519 } from '@toolplane/crypto';
import { writeKeyPair } from '@toolplane/messaging';

function kubernetes(namespace: string | undefined): string {
  const ns = namespace ? `\n  namespace: ${namespace}` : '';
  const keys = APP_NAMES.map((app) => ({ app, ...generateX25519() }));
  const docs = keys.map(
    ({ app, seed }) =>
      `apiVersion: v1\nkind: Secret\nmetadata:\n  name: toolplane-identity-${app}${ns}\n  labels:\n    app.kubernetes.io/part-of: toolplane\ntype: Opaque\nstringData:\n  ${app}.key: ${JSON.stringify(seed)}\n`,
  );
  docs.push(
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: toolplane-service-keys${ns}\n  labels:\n    app.kubernetes.io/part-of: toolplane\ndata:\n${keys.map(({ app, seed, publicKey }) => `  ${app}.pub: ${JSON.stringify(publicKey)}\n  ${app}.sign.pub: ${JSON.stringify(eventSigningKey(seed).publicKey)}`).join('\n')}\n`,
  );
  return docs.join('---\n');
}

function main(argv: string[]): void {
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const dir = value('--dir');
  if (argv.includes('--kubernetes')) {
    process.stdout.write(kubernetes(value('--namespace')));
  } else if (dir) {
    for (const app of APP_NAMES) writeKeyPair(dir, app);
    process.stdout.write(`service keys of ${APP_NAMES.join(', ')} in ${dir}\n`);
  } else {
    process.stderr.write('usage: service-keys --dir DIR | --kubernetes [--namespace NS]\n');
    process.exit(2);
  }
}

if (require.main === module) main(process.argv.slice(2));
