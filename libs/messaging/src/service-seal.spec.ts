import type { AppName } from '@toolplane/contracts';
import { generateX25519, x25519FromSeed, x25519PublicKey } from '@toolplane/crypto';
import type { KeyObject } from 'node:crypto';
import { ReplayWindow, ServiceSealer } from './service-seal';

const ids = Object.fromEntries(
  (['executor', 'runner-local', 'credentials'] as AppName[]).map((a) => [a, generateX25519()]),
);
const peers = {
  get: (app: AppName): KeyObject | undefined => (ids[app] ? x25519PublicKey(ids[app].publicKey) : undefined),
};
const as = (app: AppName, skew = 30_000) =>
  new ServiceSealer(app, x25519FromSeed(ids[app]!.seed).privateKey, peers, skew);
const body = new TextEncoder().encode('{"env":{"API_KEY":"sk-live-1"}}');

describe('ServiceSealer', () => {
  it('opens only for the receiver, proves the sender, and binds the reply to its request', () => {
    const executor = as('executor');
    const runner = as('runner-local');
    const sealed = executor.sealRequest('toolplane.internal.v1.runners.local.run', 'runner-local', body);
    expect(sealed.data.includes(Buffer.from('sk-live-1'))).toBe(false);
    const opened = runner.openRequest('toolplane.internal.v1.runners.local.run', sealed.header, sealed.data);
    expect(opened).toMatchObject({ from: 'executor', nonce: sealed.nonce });
    expect(opened.body.toString()).toBe('{"env":{"API_KEY":"sk-live-1"}}');
    // A third service holds no key that opens it.
    expect(() =>
      as('credentials').openRequest('toolplane.internal.v1.runners.local.run', sealed.header, sealed.data),
    ).toThrow(/does not open/);

    const reply = runner.sealReply(
      'toolplane.internal.v1.runners.local.run',
      'executor',
      opened.nonce,
      Buffer.from('{"ok":true}'),
    );
    expect(
      executor
        .openReply('toolplane.internal.v1.runners.local.run', 'runner-local', sealed.nonce, reply.header, reply.data)
        .toString(),
    ).toBe('{"ok":true}');
    // A reply to another request, or claimed by another service, does not open.
    expect(() =>
      executor.openReply(
        'toolplane.internal.v1.runners.local.run',
        'runner-local',
        'A'.repeat(16),
        reply.header,
        reply.data,
      ),
    ).toThrow(/does not open/);
    expect(() =>
      executor.openReply(
        'toolplane.internal.v1.runners.local.run',
        'credentials',
        sealed.nonce,
        reply.header,
        reply.data,
      ),
    ).toThrow(/expected credentials/);
  });

  it('refuses replays, other subjects, altered headers and stale or future clocks', () => {
    const executor = as('executor');
    const runner = as('runner-local', 1000);
    const subject = 'toolplane.internal.v1.runners.local.run';
    const sealed = executor.sealRequest(subject, 'runner-local', body);
    expect(() => runner.openRequest('toolplane.internal.v1.other.run', sealed.header, sealed.data)).toThrow(
      /does not open/,
    );
    runner.openRequest(subject, sealed.header, sealed.data);
    expect(() => runner.openRequest(subject, sealed.header, sealed.data)).toThrow(/replayed/);
    const [v, app, ts, nonce] = sealed.header.split(' ');
    expect(() => runner.openRequest(subject, `${v} ${app} ${Number(ts) + 1} ${nonce}`, sealed.data)).toThrow(
      /does not open|replayed/,
    );
    expect(() => runner.openRequest(subject, `${v} credentials ${ts} ${nonce}`, sealed.data)).toThrow(/does not open/);
    expect(() => runner.openRequest(subject, `${v} nobody ${ts} ${nonce}`, sealed.data)).toThrow(/unknown service/);
    expect(() => runner.openRequest(subject, `v2 ${app} ${ts} ${nonce}`, sealed.data)).toThrow(/malformed/);
    expect(() => runner.openRequest(subject, 'garbage', sealed.data)).toThrow(/malformed/);
    jest.useFakeTimers({ now: Date.now() + 5000 });
    try {
      const late = executor.sealRequest(subject, 'runner-local', body);
      jest.setSystemTime(Date.now() - 10_000);
      expect(() => runner.openRequest(subject, late.header, late.data)).toThrow(/clock-skew/);
    } finally {
      jest.useRealTimers();
    }
  });

  it('says which peer key is missing instead of sealing to nobody', () => {
    const lonely = new ServiceSealer('executor', x25519FromSeed(ids.executor!.seed).privateKey, {
      get: () => undefined,
    });
    expect(() => lonely.sealRequest('s', 'runner-local', body)).toThrow(
      expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }),
    );
  });
});

describe('ReplayWindow', () => {
  it('remembers ids for at least one window and forgets them after two', () => {
    jest.useFakeTimers({ now: 0 });
    try {
      const w = new ReplayWindow(1000);
      expect(w.add('a')).toBe(true);
      expect(w.add('a')).toBe(false);
      jest.setSystemTime(1500);
      expect(w.add('b')).toBe(true);
      expect(w.add('a')).toBe(false); // in the previous generation
      jest.setSystemTime(2600);
      expect(w.add('b')).toBe(false);
      jest.setSystemTime(5000);
      expect(w.add('a')).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });
});
