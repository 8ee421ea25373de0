import { headers } from '@nats-io/transport-node';
import { eventSigningKey, generateX25519 } from '@toolplane/crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventSigner, EventVerifier } from './event-signature';
import { KeyDirectory, writeKeyPair } from './key-directory';

/** Polls `check` until it passes (libs/testing depends on this lib: its expectEventually cannot be used here). */
async function expectEventually(check: () => void, opts: { timeoutMs: number; intervalMs: number }): Promise<void> {
  const until = Date.now() + opts.timeoutMs;
  for (;;) {
    try {
      return check();
    } catch (e) {
      if (Date.now() > until) throw e;
      await new Promise((r) => setTimeout(r, opts.intervalMs));
    }
  }
}

describe('KeyDirectory: event signing keys', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tp-keydir-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("publishes each app's event key, derived from its identity key, as <app>.sign.pub", () => {
    writeKeyPair(dir, 'registry');
    const seed = readFileSync(join(dir, 'registry.key'), 'utf8');
    expect(readFileSync(join(dir, 'registry.sign.pub'), 'utf8').trim()).toBe(eventSigningKey(seed).publicKey);
    const sut = new KeyDirectory(dir);
    // Every replica (a new KeyDirectory) signs with the same key.
    expect(sut.ownKey('registry', false).signing.publicKey).toBe(
      new KeyDirectory(dir).ownKey('registry', false).signing.publicKey,
    );
    // A directory made before event keys: written again by `service-keys --dir` (writeKeyPair keeps the key).
    rmSync(join(dir, 'registry.sign.pub'));
    expect(() => new KeyDirectory(dir).ownKey('registry', false)).toThrow(/sign\.pub/);
    writeKeyPair(dir, 'registry');
    expect(readFileSync(join(dir, 'registry.key'), 'utf8')).toBe(seed);
    expect(new KeyDirectory(dir).ownKey('registry', false).signing.publicKey).toBe(eventSigningKey(seed).publicKey);
  });

  it('accepts a key rotated into <app>.sign.pub after the consumer started', async () => {
    writeKeyPair(dir, 'credentials');
    const keys = new KeyDirectory(dir, 1500);
    const sut = new EventVerifier(keys);
    const subject = 'p.toolplane.internal.v1.events.credentials.changed';
    const body = Buffer.from('{"org_id":"acme"}');
    const event = (seed: string, id: string) => {
      const h = headers();
      new EventSigner('credentials', eventSigningKey(seed).privateKey).sign(h, subject, id, body);
      return h;
    };
    const current = readFileSync(join(dir, 'credentials.key'), 'utf8');
    // Kept to be read again by another subscription once its key has left the set (below).
    const first = event(current, 'c-1');
    expect(sut.verify(['credentials'], subject, first, body).ok).toBe(true);
    const next = generateX25519().seed;
    expect(sut.verify(['credentials'], subject, event(next, 'n-0'), body)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    appendFileSync(join(dir, 'credentials.sign.pub'), `${eventSigningKey(next).publicKey}\n`);
    // The directory is looked at again (at most once a second) when a signature does not verify.
    let n = 0;
    await expectEventually(
      () => expect(sut.verify(['credentials'], subject, event(next, `n-${++n}`), body).ok).toBe(true),
      { timeoutMs: 5000, intervalMs: 100 },
    );
    expect(sut.verify(['credentials'], subject, event(current, 'c-2'), body).ok).toBe(true);
    // The old key leaves the set: its events are refused once the directory is read again (every refreshMs).
    writeFileSync(join(dir, 'credentials.sign.pub'), `${eventSigningKey(next).publicKey}\n`);
    await expectEventually(
      () =>
        expect(sut.verify(['credentials'], subject, event(current, `c-${++n + 2}`), body)).toEqual({
          ok: false,
          reason: 'bad_signature',
        }),
      { timeoutMs: 5000, intervalMs: 100 },
    );
    // Its signature verified (and cached) while the key was in the set does not pass either.
    expect(sut.verify(['credentials'], subject, first, body, { replay: sut.replayWindow() })).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
  });
});
