import { headers } from '@nats-io/transport-node';
import { Headers, type AppName } from '@toolplane/contracts';
import { ed25519PublicKey, eventSigningKey, generateX25519 } from '@toolplane/crypto';
import type { KeyObject } from 'node:crypto';
import { EventSigner, EventVerifier, StaticPublisherKeys, type PublisherKeys } from './event-signature';

const seed = { registry: generateX25519().seed, executor: generateX25519().seed, rotated: generateX25519().seed };
const keyOf = (s: string) => eventSigningKey(s);
const pub = (s: string) => ed25519PublicKey(keyOf(s).publicKey);
const keys = new StaticPublisherKeys({ registry: [pub(seed.registry)], executor: [pub(seed.executor)] });
const subject = 'p1.toolplane.v1.events.tool.updated';
const body = Buffer.from('{"org_id":"acme"}');

function signed(app: AppName, s: string, opts: { subject?: string; id?: string; body?: Uint8Array } = {}) {
  const h = headers();
  new EventSigner(app, keyOf(s).privateKey).sign(h, opts.subject ?? subject, opts.id ?? 'e-1', opts.body ?? body);
  return h;
}

describe('EventSigner / EventVerifier', () => {
  it('accepts an event signed by its owner, once', () => {
    const sut = new EventVerifier(keys);
    const h = signed('registry', seed.registry);
    expect(sut.verify(['registry'], subject, h, body)).toMatchObject({ ok: true, publisher: 'registry', id: 'e-1' });
    expect(sut.verify(['registry'], subject, h, body)).toEqual({ ok: false, reason: 'replay' });
  });

  it('drops an unsigned event, and one signed by an app that does not own it (a genuine signature)', () => {
    const sut = new EventVerifier(keys);
    expect(sut.verify(['registry'], subject, undefined, body)).toEqual({ ok: false, reason: 'unsigned' });
    expect(sut.verify(['registry'], subject, headers(), body)).toEqual({ ok: false, reason: 'unsigned' });
    expect(sut.verify(['registry'], subject, signed('executor', seed.executor), body)).toEqual({
      ok: false,
      reason: 'not_owner',
    });
    const h = signed('registry', seed.registry);
    h.set(Headers.EVENT_PUBLISHER, 'nobody');
    expect(sut.verify(['registry'], subject, h, body)).toEqual({ ok: false, reason: 'not_owner' });
  });

  it("drops a signature moved to another subject, body, publisher or id, or by a key not the owner's", () => {
    const sut = new EventVerifier(keys);
    const bad = { ok: false, reason: 'bad_signature' };
    expect(
      sut.verify(
        ['registry'],
        'p2.toolplane.v1.events.tool.updated',
        signed('registry', seed.registry, { id: 's' }),
        body,
      ),
    ).toEqual(bad);
    expect(
      sut.verify(
        ['registry'],
        subject,
        signed('registry', seed.registry, { id: 'b' }),
        Buffer.from('{"org_id":"other"}'),
      ),
    ).toEqual(bad);
    // Claims the registry, signed by the executor's key.
    const claimed = signed('executor', seed.executor, { id: 'p' });
    claimed.set(Headers.EVENT_PUBLISHER, 'registry');
    expect(sut.verify(['registry', 'executor'], subject, claimed, body)).toEqual(bad);
    const moved = signed('registry', seed.registry, { id: 'i-1' });
    moved.set(Headers.EVENT_SIGNATURE, moved.get(Headers.EVENT_SIGNATURE).replace(' i-1 ', ' i-2 '));
    expect(sut.verify(['registry'], subject, moved, body)).toEqual(bad);
    expect(sut.verify(['registry'], subject, signed('registry', generateX25519().seed, { id: 'k' }), body)).toEqual(
      bad,
    );
    const garbled = signed('registry', seed.registry, { id: 'g' });
    garbled.set(Headers.EVENT_SIGNATURE, 'v1 x g sig');
    expect(sut.verify(['registry'], subject, garbled, body)).toEqual(bad);
    // A forgery does not enter the replay window: the genuine event with that id still passes.
    expect(sut.verify(['registry'], subject, signed('registry', seed.registry, { id: 'k' }), body).ok).toBe(true);
  });

  it("drops a stale event, except when reading the stream's history (where a redelivery is not a replay)", () => {
    const sut = new EventVerifier(keys, 1000);
    const h = signed('registry', seed.registry, { id: 'old' });
    const [v, , id, sig] = h.get(Headers.EVENT_SIGNATURE).split(' ');
    // Re-signed with a time 10 s ago.
    const old = headers();
    const ts = String(Date.now() - 10_000);
    const signer = new EventSigner('registry', keyOf(seed.registry).privateKey);
    const realNow = Date.now;
    Date.now = () => Number(ts);
    try {
      signer.sign(old, subject, 'old', body);
    } finally {
      Date.now = realNow;
    }
    expect([v, id, sig?.length]).toEqual(['v1', 'old', 86]);
    expect(sut.verify(['registry'], subject, old, body)).toEqual({ ok: false, reason: 'stale' });
    expect(sut.verify(['registry'], subject, old, body, { history: true, seq: 7 }).ok).toBe(true);
    expect(sut.verify(['registry'], subject, old, body, { history: true, seq: 7 }).ok).toBe(true);
    expect(sut.verify(['registry'], subject, old, body, { history: true, seq: 8 })).toEqual({
      ok: false,
      reason: 'replay',
    });
  });

  it('accepts any key of a rotated set, and a key rotated in after the first look', () => {
    let current: KeyObject[] = [pub(seed.registry)];
    const source: PublisherKeys = { signingKeys: (_app, reload) => (reload ? (current = [...current]) : current) };
    const sut = new EventVerifier(source);
    expect(sut.verify(['registry'], subject, signed('registry', seed.rotated, { id: 'r-0' }), body)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    current = [pub(seed.registry), pub(seed.rotated)];
    expect(sut.verify(['registry'], subject, signed('registry', seed.rotated, { id: 'r-1' }), body).ok).toBe(true);
    expect(sut.verify(['registry'], subject, signed('registry', seed.registry, { id: 'r-2' }), body).ok).toBe(true);
    current = [pub(seed.rotated)];
    expect(sut.verify(['registry'], subject, signed('registry', seed.registry, { id: 'r-3' }), body)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('stops accepting a signature it verified before once its key leaves the set (the cache does not outlive the key)', () => {
    const removed = pub(seed.rotated);
    let current: KeyObject[] = [pub(seed.registry), removed];
    const source: PublisherKeys = { signingKeys: () => current };
    const sut = new EventVerifier(source);
    // One event, read by two subscriptions (each its own replay window): the second is a cache hit.
    const h = signed('registry', seed.rotated, { id: 'c-1' });
    expect(sut.verify(['registry'], subject, h, body, { replay: sut.replayWindow() }).ok).toBe(true);
    expect(sut.verify(['registry'], subject, h, body, { replay: sut.replayWindow() }).ok).toBe(true);
    current = current.filter((k) => k !== removed);
    expect(sut.verify(['registry'], subject, h, body, { replay: sut.replayWindow() })).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    // The key back in the set (a new object for the same key): it verifies again.
    current = [...current, pub(seed.rotated)];
    expect(sut.verify(['registry'], subject, h, body, { replay: sut.replayWindow() }).ok).toBe(true);
  });

  it('refuses to sign an id with spaces (the header is space-separated)', () => {
    expect(() => signed('registry', seed.registry, { id: 'a b' })).toThrow(/event id/);
  });
});
