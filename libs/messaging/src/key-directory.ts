import { APP_NAMES, type AppName } from '@toolplane/contracts';
import { generateX25519, x25519FromSeed, x25519PublicKey } from '@toolplane/crypto';
import type { KeyObject } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where a service finds public keys of the others: by app name. */
export interface PeerKeys {
  get(app: AppName): KeyObject | undefined;
}

const PUB = '.pub';
const KEY = '.key';
const RESCAN_MS = 1000;

/**
 * A directory of service identities: `<app>.key` (this app's X25519 private key, base64url, mode
 * 0600) and `<app>.pub` (every app's public key). In Kubernetes it is a projected volume: the
 * app's own Secret plus the ConfigMap of public keys; in development `npm start` keeps one with
 * every app's keys in `.toolplane/keys`.
 */
export class KeyDirectory implements PeerKeys {
  private peers = new Map<AppName, KeyObject>();
  private scannedAt = 0;

  constructor(readonly dir: string) {}

  /** This app's private key; in development (`generate`) created once if missing. */
  ownKey(app: AppName, generate: boolean): { privateKey: KeyObject; publicKey: string } {
    const file = join(this.dir, `${app}${KEY}`);
    let seed: string;
    try {
      seed = readFileSync(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || !generate) {
        throw new Error(`service identity ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'}): generate keys with \`npm run keys\``);
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
    return pair;
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
    let names: string[] = [];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      const app = name.slice(0, -PUB.length) as AppName;
      if (!name.endsWith(PUB) || !APP_NAMES.includes(app)) continue;
      try {
        found.set(app, x25519PublicKey(readFileSync(join(this.dir, name), 'utf8')));
      } catch {
        // a malformed key file: that app stays unknown (its messages are refused)
      }
    }
    this.peers = found;
  }
}

/** Writes `<app>.key` (0600, never overwritten) and `<app>.pub`. */
export function writeKeyPair(dir: string, app: AppName): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { seed, publicKey } = generateX25519();
  try {
    writeFileSync(join(dir, `${app}${KEY}`), `${seed}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    return x25519FromSeed(readFileSync(join(dir, `${app}${KEY}`), 'utf8')).publicKey; // another process made it first
  }
  chmodSync(join(dir, `${app}${KEY}`), 0o600);
  writeFileSync(join(dir, `${app}${PUB}`), `${publicKey}\n`);
  return publicKey;
}
