import { APP_NAMES, ErrorCode, ToolplaneError, type AppName } from '@toolplane/contracts';
import { AeadError, decryptGcm, encryptGcm, IV_BYTES, messageKey, pairwiseKey, randomIv } from '@toolplane/crypto';
import { createSecretKey, type KeyObject } from 'node:crypto';
import type { PeerKeys } from './key-directory';

const VERSION = 'v1';
/** The message's random 96-bit IV, base64url: also its id for replay checks and reply binding. */
const NONCE = /^[A-Za-z0-9_-]{16}$/;
/** Pair keys are re-derived per hour (epoch), far below the 2^32 messages a random-IV GCM key may take. */
const EPOCH_MS = 3_600_000;

export interface Sealed {
  /** The Headers.SERVICE_SEAL value. */
  header: string;
  data: Buffer;
  nonce: string;
}

export interface Opened {
  from: AppName;
  body: Buffer;
  nonce: string;
}

/** A request, its reply, or a progress report on it. */
type Kind = 'req' | 'rep' | 'prg';

const unauthenticated = (why: string) =>
  new ToolplaneError(ErrorCode.UNAUTHENTICATED, `Service credential refused: ${why}`, undefined, false);

/**
 * Service-to-service messages, sealed. Each pair of apps shares a static key (X25519 of their
 * identities + HKDF, see @toolplane/crypto), re-derived each hour; each message is AES-256-GCM
 * under it with a fresh random IV, with the subject, both apps, the time, the IV and — for a
 * reply — the request's IV as associated data. So a message:
 * - opens only for its one receiver (a subscriber on the bus sees ciphertext),
 * - proves its sender (only the two apps can derive the key), and is bound to its subject: a
 *   header or body moved to another message, subject or receiver does not open;
 * - is refused when older than the clock-skew window or seen before (replay), per replica.
 */
export class ServiceSealer {
  private readonly pairs = new Map<AppName, Buffer>();
  private readonly epochs = new Map<string, KeyObject>();
  private readonly replay: ReplayWindow;

  constructor(
    readonly app: AppName,
    private readonly own: KeyObject,
    private readonly peers: PeerKeys,
    private readonly skewMs = 30_000,
  ) {
    this.replay = new ReplayWindow(2 * skewMs);
  }

  sealRequest(subject: string, to: AppName, body: Uint8Array): Sealed {
    return this.seal('req', subject, to, body, '');
  }

  /** A request's body, or UNAUTHENTICATED (unknown sender, bad seal, stale, replayed). */
  openRequest(subject: string, header: string, data: Uint8Array): Opened {
    const opened = this.open('req', subject, header, data, '', undefined);
    if (!this.replay.add(`${opened.from}/${opened.nonce}`)) throw unauthenticated('replayed message');
    return opened;
  }

  sealReply(subject: string, to: AppName, requestNonce: string, body: Uint8Array): Sealed {
    return this.seal('rep', subject, to, body, requestNonce);
  }

  openReply(subject: string, from: AppName, requestNonce: string, header: string, data: Uint8Array): Buffer {
    return this.open('rep', subject, header, data, requestNonce, from).body;
  }

  /**
   * Progress report `seq` on a request (sent to its reply subject): bound to the request and to its
   * sequence number, and of its own kind, so it never opens as the reply nor the reply as it.
   */
  sealProgress(subject: string, to: AppName, requestNonce: string, seq: number, body: Uint8Array): Sealed {
    return this.seal('prg', subject, to, body, `${requestNonce}/${seq}`);
  }

  openProgress(
    subject: string,
    from: AppName,
    requestNonce: string,
    seq: number,
    header: string,
    data: Uint8Array,
  ): Buffer {
    return this.open('prg', subject, header, data, `${requestNonce}/${seq}`, from).body;
  }

  private seal(kind: Kind, subject: string, to: AppName, body: Uint8Array, requestNonce: string): Sealed {
    const iv = randomIv();
    const nonce = iv.toString('base64url');
    const ts = Date.now();
    const key = this.epochKey(to, this.pairKey(to), ts);
    const data = encryptGcm(
      key,
      Buffer.from(body.buffer, body.byteOffset, body.byteLength),
      aad(kind, subject, this.app, to, ts, nonce, requestNonce),
      iv,
    );
    return { header: `${VERSION} ${this.app} ${ts} ${nonce}`, data, nonce };
  }

  private open(
    kind: Kind,
    subject: string,
    header: string,
    data: Uint8Array,
    requestNonce: string,
    expected: AppName | undefined,
  ): Opened {
    const parts = header.split(' ');
    if (parts.length !== 4 || parts[0] !== VERSION) throw unauthenticated('malformed header');
    const [, from, tsText, nonce] = parts as [string, AppName, string, string];
    if (!APP_NAMES.includes(from)) throw unauthenticated('unknown service');
    if (expected && from !== expected) throw unauthenticated(`reply from ${from}, expected ${expected}`);
    if (!NONCE.test(nonce) || !/^\d{1,15}$/.test(tsText)) throw unauthenticated('malformed header');
    const ts = Number(tsText);
    if (Math.abs(Date.now() - ts) > this.skewMs) throw unauthenticated('outside the clock-skew window');
    const pair = this.pairKeyOrUndefined(from);
    if (!pair) throw unauthenticated(`no public key for service ${from}`);
    // The IV travels in the header too: a body whose IV is not the header's nonce is refused.
    if (
      data.byteLength < IV_BYTES ||
      Buffer.from(data.buffer, data.byteOffset, IV_BYTES).toString('base64url') !== nonce
    )
      throw unauthenticated('seal does not open (wrong key, subject, receiver or body)');
    try {
      const body = decryptGcm(
        this.epochKey(from, pair, ts),
        data,
        aad(kind, subject, from, this.app, ts, nonce, requestNonce),
      );
      return { from, body, nonce };
    } catch (e) {
      if (e instanceof AeadError) throw unauthenticated('seal does not open (wrong key, subject, receiver or body)');
      throw e;
    }
  }

  /** The pair key of this hour (derived once per peer and hour). */
  private epochKey(peer: AppName, pair: Buffer, ts: number): KeyObject {
    const epoch = Math.floor(ts / EPOCH_MS);
    const id = `${peer}/${epoch}`;
    let k = this.epochs.get(id);
    if (!k) {
      if (this.epochs.size > 64) this.epochs.clear();
      k = createSecretKey(messageKey(pair, Buffer.from(`epoch ${epoch}`)));
      this.epochs.set(id, k);
    }
    return k;
  }

  private pairKey(peer: AppName): Buffer {
    const k = this.pairKeyOrUndefined(peer);
    if (!k)
      throw new ToolplaneError(
        ErrorCode.SERVICE_UNAVAILABLE,
        `No public key for service ${peer}: its identity is not installed here`,
        { service: peer },
      );
    return k;
  }

  private pairKeyOrUndefined(peer: AppName): Buffer | undefined {
    const hit = this.pairs.get(peer);
    if (hit) return hit;
    const pub = this.peers.get(peer);
    if (!pub) return undefined;
    const k = pairwiseKey(this.own, pub, [this.app, peer], 'toolplane/service-seal/v1');
    this.pairs.set(peer, k);
    return k;
  }
}

function aad(
  kind: string,
  subject: string,
  from: string,
  to: string,
  ts: number,
  nonce: string,
  requestNonce: string,
): Buffer {
  return Buffer.from(['toolplane/seal/v1', kind, subject, from, to, String(ts), nonce, requestNonce].join('\u0000'));
}

/**
 * Ids seen within the last `windowMs` (two rotating generations; memory bounded by traffic in one
 * window): sealed messages' nonces, and signed events' ids (EventVerifier).
 */
export class ReplayWindow {
  private current = new Map<string, string | number | undefined>();
  private previous = new Map<string, string | number | undefined>();
  private rotatedAt = Date.now();

  constructor(private readonly windowMs: number) {}

  /**
   * false when seen before (a replay). With a `tag` (e.g. a stream sequence), an id seen again
   * with the same tag is not a replay (a redelivery of the same stored message).
   */
  add(id: string, tag?: string | number): boolean {
    const now = Date.now();
    if (now - this.rotatedAt >= this.windowMs) {
      this.previous = now - this.rotatedAt >= 2 * this.windowMs ? new Map() : this.current;
      this.current = new Map();
      this.rotatedAt = now;
    }
    const seen = this.current.has(id) ? this.current.get(id) : this.previous.has(id) ? this.previous.get(id) : null;
    if (seen !== null) return tag !== undefined && seen === tag;
    this.current.set(id, tag);
    return true;
  }
}
