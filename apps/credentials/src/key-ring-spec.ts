/**
 * The CREDENTIALS_KEYS format, read by the app's config (to check it at start) and by the key ring
 * (crypto/key-ring.ts): below both, so neither imports the other.
 */
const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;
/** Bytes of each key (AES-256). */
export const KEY_BYTES = 32;

/** `k1:base64,k2:base64` (commas or newlines) → id → key. Errors name entries by position, never by value. */
export function parseKeyRingSpec(spec: string): Map<string, Buffer> {
  const keys = new Map<string, Buffer>();
  const entries = spec
    .split(/[,\n]/)
    .map((e) => e.trim())
    .filter((e) => e && !e.startsWith('#'));
  if (!entries.length) throw new Error('no keys given');
  entries.forEach((entry, i) => {
    const at = entry.indexOf(':');
    const id = at > 0 ? entry.slice(0, at) : '';
    if (!KEY_ID.test(id)) throw new Error(`entry ${i + 1}: expected id:base64key with an id of letters, digits, _ . -`);
    const key = Buffer.from(entry.slice(at + 1), 'base64');
    if (key.length !== KEY_BYTES) throw new Error(`key ${id}: must be ${KEY_BYTES} bytes (base64), got ${key.length}`);
    if (keys.has(id)) throw new Error(`key ${id}: listed twice`);
    keys.set(id, key);
  });
  return keys;
}
