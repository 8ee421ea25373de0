import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { KEY_BYTES, parseKeyRingSpec } from '../key-ring-spec';

/** Injection token of the loaded key ring. */
export const KEY_RING = Symbol('KEY_RING');

/** The key-encryption keys: id → 32-byte AES key, one of them active. */
export interface KeyRing {
  readonly keys: ReadonlyMap<string, Buffer>;
  readonly activeKeyId: string;
}

export interface KeyRingSource {
  TOOLPLANE_PROFILE: 'development' | 'production';
  CREDENTIALS_KEYS?: string;
  CREDENTIALS_KEYS_FILE?: string;
  CREDENTIALS_ACTIVE_KEY?: string;
  CREDENTIALS_DEV_KEY_FILE: string;
}

/**
 * The configured key ring. In the development profile with no keys configured, a key is
 * generated once and kept in CREDENTIALS_DEV_KEY_FILE (with a loud warning); production refuses
 * to start without configured keys.
 */
export function loadKeyRing(c: KeyRingSource, log = new Logger('KeyRing')): KeyRing {
  let keys: Map<string, Buffer>;
  if (c.CREDENTIALS_KEYS !== undefined) keys = parseKeyRingSpec(c.CREDENTIALS_KEYS);
  else if (c.CREDENTIALS_KEYS_FILE !== undefined) {
    let text: string;
    try {
      text = readFileSync(c.CREDENTIALS_KEYS_FILE, 'utf8');
    } catch (e) {
      throw new Error(
        `CREDENTIALS_KEYS_FILE ${c.CREDENTIALS_KEYS_FILE} cannot be read: ${(e as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
    keys = parseKeyRingSpec(text);
  } else if (c.TOOLPLANE_PROFILE === 'development') {
    keys = new Map([['dev', developmentKey(resolve(c.CREDENTIALS_DEV_KEY_FILE))]]);
    log.warn(
      `!!! NO ENCRYPTION KEYS CONFIGURED: secrets are sealed with a DEVELOPMENT key kept in ${c.CREDENTIALS_DEV_KEY_FILE}. ` +
        'Never use this outside development: set CREDENTIALS_KEYS (or CREDENTIALS_KEYS_FILE) and CREDENTIALS_ACTIVE_KEY. !!!',
    );
  } else {
    throw new Error('CREDENTIALS_KEYS (or CREDENTIALS_KEYS_FILE) is required in production');
  }
  const activeKeyId = c.CREDENTIALS_ACTIVE_KEY ?? [...keys.keys()].at(-1)!;
  if (!keys.has(activeKeyId)) throw new Error(`CREDENTIALS_ACTIVE_KEY ${activeKeyId} is not in the key ring`);
  return { keys, activeKeyId };
}

/** Reads the development key, or creates it (0600) if this is the first start. */
function developmentKey(file: string): Buffer {
  try {
    return decodeDevKey(readFileSync(file, 'utf8'), file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  mkdirSync(dirname(file), { recursive: true });
  try {
    writeFileSync(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e; // another process made it first
  }
  return decodeDevKey(readFileSync(file, 'utf8'), file);
}

function decodeDevKey(text: string, file: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== KEY_BYTES) throw new Error(`the development key in ${file} is not ${KEY_BYTES} bytes of base64`);
  return key;
}
