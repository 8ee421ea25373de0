import { APP_NAMES, Headers, type AppName } from '@toolplane/contracts';
import { signEd25519, verifyEd25519 } from '@toolplane/crypto';
import { createHash, randomUUID, type KeyObject } from 'node:crypto';
import { ReplayWindow } from './service-seal';

/**
 * Where a consumer finds each publisher's event verification keys (a rotated set: any of them
 * verifies). A key that stays in the set stays the same KeyObject: EventVerifier's cache holds a
 * verified signature only while the key that verified it is in the current set (a new object for
 * the same key costs one more verify, never a wrong answer).
 */
export interface PublisherKeys {
  /** `reload`: look again now (a key rotated in since the last look); the source rate-limits it. */
  signingKeys(app: AppName, reload?: boolean): readonly KeyObject[];
}

/** Why a consumer dropped an event, before any handler saw it. */
export const EVENT_DROP_REASONS = ['unsigned', 'bad_signature', 'not_owner', 'replay', 'stale'] as const;
export type EventDropReason = (typeof EVENT_DROP_REASONS)[number];

export type EventVerdict =
  | { ok: true; publisher: AppName; id: string; ts: number }
  | { ok: false; reason: EventDropReason };

interface HeaderWriter {
  set(k: string, v: string): void;
}
interface HeaderReader {
  get(k: string): string;
}

const VERSION = 'v1';
/** An event id: printable ASCII without spaces (a UUID, an outbox event id). */
const ID = /^[\x21-\x7e]{1,200}$/;
/** 64 bytes, base64url. */
const SIGNATURE = /^[A-Za-z0-9_-]{86}$/;
const TS = /^\d{1,15}$/;

/** What the publisher signs: a domain label, the subject (with its deployment prefix), the event id, the publisher, the time, then the body. */
function signedBytes(subject: string, id: string, publisher: string, ts: string, body: Uint8Array): Buffer {
  return Buffer.concat([
    Buffer.from(`toolplane/event/${VERSION}\u0000${subject}\u0000${id}\u0000${publisher}\u0000${ts}\u0000`),
    body,
  ]);
}

/**
 * An app's event signature (Ed25519, its key derived from its identity seed): one per event it
 * publishes — JetStream publish, outbox relay, broadcast. Ed25519 rather than the pairwise seal:
 * a consumer outside the services (an agent runtime, the CLI) verifies with the public key and
 * cannot forge, which a key shared with the publisher cannot give.
 */
export class EventSigner {
  constructor(
    readonly app: AppName,
    private readonly key: KeyObject,
  ) {}

  /** A fresh event id (for a broadcast: JetStream events use their msgID). */
  newId(): string {
    return randomUUID();
  }

  /** Sets Headers.EVENT_PUBLISHER and Headers.EVENT_SIGNATURE on `h` for `body` on `subject` (with the prefix). */
  sign(h: HeaderWriter, subject: string, id: string, body: Uint8Array): void {
    if (!ID.test(id)) throw new Error(`event id ${JSON.stringify(id)} is not printable ASCII without spaces`);
    const ts = String(Date.now());
    const sig = signEd25519(this.key, signedBytes(subject, id, this.app, ts, body)).toString('base64url');
    h.set(Headers.EVENT_PUBLISHER, this.app);
    h.set(Headers.EVENT_SIGNATURE, `${VERSION} ${ts} ${id} ${sig}`);
  }
}

export interface VerifyOptions {
  /**
   * A read of the stream's history (a consumer that starts at the beginning or at a date): no
   * staleness check — an old event is expected there, and the stream holds it once per id — and
   * an id seen again is a replay only on another stream sequence than `seq` (a redelivery is not).
   */
  history?: boolean;
  seq?: number;
  /**
   * The ids this consumer has seen (one per subscription: two handlers of one event in one
   * process each get it once); by default the verifier's own.
   */
  replay?: ReplayWindow;
}

/**
 * Checks an event before any handler sees it: signed (v1 header), by an app its descriptor's
 * `publishedBy` names, with one of that app's current public keys, over this subject, id, time and
 * body; not older or newer than the skew window; not an id this consumer saw within the window.
 * One check per received message: header parsing, one Ed25519 verify (a rotated set: each key
 * until one verifies), one set lookup.
 */
export class EventVerifier {
  private readonly replay: ReplayWindow;
  /**
   * Signatures verified lately, by a hash of what they sign and the signature, with the key that
   * verified each: the other handlers of one event in this process (the executor reads a tool
   * event in four places) pay a SHA-256 (~5 µs) instead of an Ed25519 verify (~10x more). A hit
   * counts only while its key is still in the publisher's current set: a key removed from a
   * rotated set (the key directory read again) stops vouching for what it verified before.
   * Bounded; cleared when full.
   */
  private readonly verified = new Map<string, KeyObject>();

  constructor(
    private readonly keys: PublisherKeys,
    private readonly skewMs = 30_000,
  ) {
    // Anything not stale is remembered: the window covers the whole skew on either side.
    this.replay = new ReplayWindow(2 * skewMs);
  }

  /** A replay window of this verifier's span, for one subscription. */
  replayWindow(): ReplayWindow {
    return new ReplayWindow(2 * this.skewMs);
  }

  verify(
    publishedBy: readonly AppName[],
    subject: string,
    headers: HeaderReader | undefined,
    body: Uint8Array,
    opts: VerifyOptions = {},
  ): EventVerdict {
    const publisher = headers?.get(Headers.EVENT_PUBLISHER) ?? '';
    const header = headers?.get(Headers.EVENT_SIGNATURE) ?? '';
    if (!publisher || !header) return { ok: false, reason: 'unsigned' };
    if (!publishedBy.includes(publisher as AppName) || !(APP_NAMES as readonly string[]).includes(publisher))
      return { ok: false, reason: 'not_owner' };
    const parts = header.split(' ');
    if (parts.length !== 4 || parts[0] !== VERSION) return { ok: false, reason: 'bad_signature' };
    const [, tsText, id, sig] = parts as [string, string, string, string];
    if (!TS.test(tsText) || !ID.test(id) || !SIGNATURE.test(sig)) return { ok: false, reason: 'bad_signature' };
    const ts = Number(tsText);
    if (!opts.history && Math.abs(Date.now() - ts) > this.skewMs) return { ok: false, reason: 'stale' };
    const app = publisher as AppName;
    if (!this.check(app, signedBytes(subject, id, app, tsText, body), Buffer.from(sig, 'base64url')))
      return { ok: false, reason: 'bad_signature' };
    // Only after a valid signature: a forger cannot fill the window with ids of events to come.
    if (!(opts.replay ?? this.replay).add(`${app}/${id}`, opts.history ? opts.seq : undefined))
      return { ok: false, reason: 'replay' };
    return { ok: true, publisher: app, id, ts };
  }

  private check(app: AppName, data: Buffer, sig: Buffer): boolean {
    const id = createHash('sha256').update(data).update(sig).digest('base64url');
    const known = this.keys.signingKeys(app);
    // By identity: a key that stays in the set stays the same object (PublisherKeys).
    const cachedBy = this.verified.get(id);
    if (cachedBy && known.includes(cachedBy)) return true;
    let by = known.find((k) => verifyEd25519(k, data, sig));
    if (!by) {
      // A key rotated in since the last look (the source looks again at most once a second).
      const fresh = this.keys.signingKeys(app, true);
      if (fresh !== known) by = fresh.find((k) => !known.includes(k) && verifyEd25519(k, data, sig));
    }
    if (!by) {
      this.verified.delete(id);
      return false;
    }
    if (this.verified.size >= 4096) this.verified.clear();
    this.verified.set(id, by);
    return true;
  }
}

/** Publisher keys given as base64url public keys by app (what an external consumer is configured with). */
export class StaticPublisherKeys implements PublisherKeys {
  private readonly keys = new Map<AppName, KeyObject[]>();

  constructor(keys: Partial<Record<AppName, readonly KeyObject[]>>) {
    for (const [app, ks] of Object.entries(keys)) this.keys.set(app as AppName, [...(ks ?? [])]);
  }

  signingKeys(app: AppName): readonly KeyObject[] {
    return this.keys.get(app) ?? [];
  }
}

/** Drop counts by subject and reason (for metrics and tests). */
export class EventDrops {
  readonly counts = new Map<string, Map<EventDropReason, number>>();

  add(subject: string, reason: EventDropReason): number {
    let bySubject = this.counts.get(subject);
    if (!bySubject) this.counts.set(subject, (bySubject = new Map()));
    const n = (bySubject.get(reason) ?? 0) + 1;
    bySubject.set(reason, n);
    return n;
  }

  get(subject: string, reason?: EventDropReason): number {
    const bySubject = this.counts.get(subject);
    if (!bySubject) return 0;
    if (reason) return bySubject.get(reason) ?? 0;
    let n = 0;
    for (const v of bySubject.values()) n += v;
    return n;
  }

  /** Prometheus text: toolplane_events_dropped_total{subject,reason}. */
  metrics(): string {
    const out = [
      '# HELP toolplane_events_dropped_total Events dropped before any handler: unsigned, bad signature, not signed by an app of publishedBy, replayed, stale.',
      '# TYPE toolplane_events_dropped_total counter',
    ];
    for (const [subject, m] of this.counts)
      for (const [reason, n] of m)
        out.push(`toolplane_events_dropped_total{subject="${subject}",reason="${reason}"} ${n}`);
    return `${out.join('\n')}\n`;
  }
}
