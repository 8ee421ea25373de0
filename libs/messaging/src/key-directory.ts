import { APP_NAMES, type AppName } from '@toolplane/contracts';
import { ed25519PublicKeys, eventSigningKey, generateX25519, x25519FromSeed, x25519PublicKey } from '@toolplane/crypto';
import type { KeyObject } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PublisherKeys } from './event-signature';

/** Where a service finds public keys of the others: by app name. */
export interface PeerKeys {
  get(app: AppName): KeyObject | undefined;
}

const PUB = '.pub';
/** An app's event verification keys (Ed25519, base64url), one a line: its current key, and during a rotation the other. */
const SIGN_PUB = '.sign.pub';
const KEY = '.key';
const RESCAN_MS = 1000;

/**
 * A directory of service identities: `<app>.key` (this app's X25519 private key, base64url, mode
 * 0600), `<app>.pub` (every app's public key) and `<app>.sign.pub` (every app's event
 * verification keys: Ed25519, derived from its `<app>.key`, see eventSigningKey). In Kubernetes
 * it is a projected volume: the app's own Secret plus the ConfigMap of public keys; in development
 * `npm start` keeps one with every app's keys in `.toolplane/keys`. An external consumer of events
 * (the CLI, @toolplane/client) reads the `.sign.pub` files of such a directory, or the ConfigMap.
 */
export class KeyDirectory implements PeerKeys, PublisherKeys {
  private peers = new Map<AppName, KeyObject>();
  private signers = new Map<AppName, readonly KeyObject[]>();
  private scannedAt = 0;

  /** `refreshMs`: event keys are read again at least this often (a key removed from a rotated set stops verifying). */
  constructor(
    readonly dir: string,
    private readonly refreshMs = 30_000,
  ) {}

  /** This app's private key; in development (`generate`) created once if missing. */
  ownKey(
    app: AppName,
    generate: boolean,
  ): { privateKey: KeyObject; publicKey: string; signing: { privateKey: KeyObject; publicKey: string } } {
    const file = join(this.dir, `${app}${KEY}`);
    let seed: string;
    try {
      seed = readFileSync(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || !generate) {
        throw new Error(
          `service identity ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'}): generate keys with \`npm run keys\``,
        );
      }
      writeKeyPair(this.dir, app);
      seed = readFileSync(file, 'utf8');
    }
    const pair = x25519FromSeed(seed);
    try {
      if (readFileSync(join(this.dir, `${app}${PUB}`), 'utf8').trim() !== pair.publicKey) throw new Error('mismatch');
    } catch {
      if (!generate) throw new Error(`${app}${PUB} in ${this.dir} is missing or is not the public key of ${app}${KEY}`);
      writeFileSync(join(this.dir, `${app}${PUB}`), `${pair.publicKey}\n`);
    }
    const signing = eventSigningKey(seed);
    if (!readLines(join(this.dir, `${app}${SIGN_PUB}`)).includes(signing.publicKey)) {
      if (!generate)
        throw new Error(
          `${app}${SIGN_PUB} in ${this.dir} does not list the event signing key of ${app}${KEY} (${signing.publicKey}): \`npm run keys\` writes it`,
        );
      writeFileSync(join(this.dir, `${app}${SIGN_PUB}`), `${signing.publicKey}\n`);
    }
    return { ...pair, signing };
  }

  signingKeys(app: AppName, reload = false): readonly KeyObject[] {
    const hit = this.signers.get(app);
    const age = Date.now() - this.scannedAt;
    if ((hit && !reload && age < this.refreshMs) || age < RESCAN_MS) return hit ?? [];
    this.scan();
    return this.signers.get(app) ?? [];
  }

  get(app: AppName): KeyObject | undefined {
    const hit = this.peers.get(app);
    if (hit || Date.now() - this.scannedAt < RESCAN_MS) return hit;
    this.scan();
    return this.peers.get(app);
  }

  private scan(): void {
    this.scannedAt = Date.now();
    const found = new Map<AppName, KeyObject>();
    const signers = new Map<AppName, readonly KeyObject[]>();
    let names: string[] = [];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (name.endsWith(SIGN_PUB)) {
        const app = name.slice(0, -SIGN_PUB.length) as AppName;
        if (!APP_NAMES.includes(app)) continue;
        const keys = ed25519PublicKeys(readLines(join(this.dir, name)).join('\n'));
        // Unchanged keys keep their objects (a consumer compares them to know what is new).
        const before = this.signers.get(app);
        signers.set(
          app,
          before && before.length === keys.length && before.every((k, i) => k.equals(keys[i]!)) ? before : keys,
        );
        continue;
      }
      const app = name.slice(0, -PUB.length) as AppName;
      if (!name.endsWith(PUB) || !APP_NAMES.includes(app)) continue;
      try {
        found.set(app, x25519PublicKey(readFileSync(join(this.dir, name), 'utf8')));
      } catch {
        // a malformed key file: that app stays unknown (its messages are refused)
      }
    }
    this.peers = found;
    this.signers = signers;
  }
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
  } catch {
    return [];
  }
}

/** Writes `<app>.key` (0600, never overwritten), `<app>.pub` and `<app>.sign.pub`. */
export function writeKeyPair(dir: string, app: AppName): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { seed, publicKey } = generateX25519();
  try {
    writeFileSync(join(dir, `${app}${KEY}`), `${seed}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    const existing = readFileSync(join(dir, `${app}${KEY}`), 'utf8'); // another process made it first
    const signing = eventSigningKey(existing).publicKey;
    if (!readLines(join(dir, `${app}${SIGN_PUB}`)).includes(signing))
      writeFileSync(join(dir, `${app}${SIGN_PUB}`), `${signing}\n`);
    return x25519FromSeed(existing).publicKey;
  }
  chmodSync(join(dir, `${app}${KEY}`), 0o600);
  writeFileSync(join(dir, `${app}${PUB}`), `${publicKey}\n`);
  writeFileSync(join(dir, `${app}${SIGN_PUB}`), `${eventSigningKey(seed).publicKey}\n`);
  return publicKey;
}
