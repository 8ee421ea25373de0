import { connect, headers, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { APP_NAMES, type AppName } from '@toolplane/contracts';
import {
  EventSigner,
  EventVerifier,
  KeyDirectory,
  MessagingClient,
  ServiceSealer,
  writeKeyPair,
  type EventSignatures,
} from '@toolplane/messaging';
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { natsUrl, ROOT } from './env';

/**
 * The identities of one test run, made once and shared (through the environment) by every stack
 * and jest worker of the run: every app's service key in one directory, and one credentials key
 * ring — so one platform operator token is valid on every stack of the run.
 */
export function ensureTestIdentity(): { keysDir: string; credentialsKeys: string } {
  if (!process.env.TOOLPLANE_TEST_KEYS_DIR) {
    const dir = mkdtempSync(join(tmpdir(), 'tp-keys-'));
    for (const app of APP_NAMES) writeKeyPair(dir, app);
    process.env.TOOLPLANE_TEST_KEYS_DIR = dir;
  }
  process.env.TOOLPLANE_TEST_CREDENTIALS_KEYS ??= `test:${randomBytes(32).toString('base64')}`;
  return { keysDir: process.env.TOOLPLANE_TEST_KEYS_DIR, credentialsKeys: process.env.TOOLPLANE_TEST_CREDENTIALS_KEYS };
}

/**
 * A platform operator token minted by the credentials CLI (as an operator would), recorded in the
 * database at `databaseUrl` (migrated by a credentials service first). `env` overrides the key ring.
 */
export function mintOperatorToken(databaseUrl: string, env: Record<string, string> = {}): string {
  const { credentialsKeys } = ensureTestIdentity();
  const r = spawnSync(
    process.execPath,
    [
      join(ROOT, 'dist', 'apps', 'credentials', 'src', 'database', 'token-cli.js'),
      'operator',
      '--name',
      'tests',
      '--ttl-days',
      '7',
    ],
    {
      cwd: ROOT,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        DATABASE_URL: databaseUrl,
        TOOLPLANE_PROFILE: 'production',
        CREDENTIALS_KEYS: credentialsKeys,
        LOG_LEVEL: 'warn',
        ...env,
      },
    },
  );
  if (r.status !== 0) throw new Error(`token-cli failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** The run's operator token (minted by the global setup, or by the first stack a benchmark starts). */
export function operatorToken(): string {
  const t = process.env.TOOLPLANE_TEST_OPERATOR_TOKEN;
  if (!t) throw new Error('TOOLPLANE_TEST_OPERATOR_TOKEN is not set: start a stack with credentials first');
  return t;
}

/** A sealer speaking as `app` with the run's keys: what a test uses to act as (or eavesdrop as) a service. */
export function sealerOf(app: AppName): ServiceSealer {
  const dir = new KeyDirectory(ensureTestIdentity().keysDir);
  return new ServiceSealer(app, dir.ownKey(app, false).privateKey, dir);
}

/** The event signer of `app` with the run's keys, and a check of received events against every app's keys. */
export function eventsOf(app: AppName): EventSignatures {
  const dir = new KeyDirectory(ensureTestIdentity().keysDir);
  return { signer: new EventSigner(app, dir.ownKey(app, false).signing.privateKey), verifier: new EventVerifier(dir) };
}

const eventSigners = new Map<AppName, EventSignatures>();

/**
 * Headers of an event signed as `app` with its real key (what the app itself would send): for a
 * test publishing raw bytes as an event's owner, or as an app that does not own it. `subject` with
 * the deployment prefix.
 */
export function signedEventHeaders(
  app: AppName,
  subject: string,
  body: Uint8Array,
  id: string = randomUUID(),
): MsgHdrs {
  let events = eventSigners.get(app);
  if (!events) eventSigners.set(app, (events = eventsOf(app)));
  const h = headers();
  events.signer.sign(h, subject, id, body);
  return h;
}

/** A typed client acting as service `app`: its requests are sealed like the app's own. */
export async function serviceClient(
  app: AppName,
  prefix: string,
): Promise<{ messaging: MessagingClient; nc: NatsConnection; close(): Promise<void> }> {
  const nc = await connect({ servers: natsUrl(), name: `test-as-${app}` });
  return { messaging: new MessagingClient(nc, prefix, sealerOf(app), eventsOf(app)), nc, close: () => nc.close() };
}
