/**
 * Cancellation and progress of a request, carried over the bus by libs/messaging: replicas of a
 * service (NatsJsonServer, in process) and its callers (MessagingClient) on the real NATS, with
 * forgers on the same open bus.
 */
import { connect, headers as natsHeaders, type Msg, type NatsConnection } from '@nats-io/transport-node';
import {
  Headers,
  PROGRESS_BURST,
  REQUEST_CANCELS,
  SealedValuesSeal,
  ToolplaneError,
  type RequestProgress,
} from '@toolplane/contracts';
import {
  currentProgressReporter,
  currentRequestSignal,
  EdgeAuth,
  MessagingClient,
  NatsJsonServer,
  reportProgress,
  TokenVerifier,
} from '@toolplane/messaging';
import { deferred, expectEventually } from '@toolplane/testing';
import { randomBytes } from 'node:crypto';
import { natsUrl } from '../support/env';
import { eventsOf, sealerOf } from '../support/identity';

type Req = { org_id: string; purpose: 'execution'; ref: string; plaintext: string };
/** What the test's handler does with a request: `ref` names it, the reply says whether its signal was aborted. */
type Behaviour = (req: Req, replica: string) => Promise<void>;

/** One request held by a replica. */
interface Held {
  ref: string;
  replica: string;
  signal: AbortSignal;
  release: () => void;
}

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

describe('request cancellation and progress over the bus (libs/messaging, real NATS)', () => {
  const conns: NatsConnection[] = [];
  const servers: NatsJsonServer[] = [];
  const tokens = new TokenVerifier(() => Promise.reject(new Error('no tenants here')), {
    refreshMs: 60_000,
    maxStaleMs: 60_000,
    cacheMax: 1,
  });

  const conn = async (name: string) => {
    const nc = await connect({ servers: natsUrl(), name, noAsyncTraces: true });
    conns.push(nc);
    return nc;
  };
  /** A credentials replica serving SealedValuesSeal with `behaviour` (the test's stand-in handler). */
  const replica = async (
    prefix: string,
    name: string,
    behaviour: Behaviour,
    progress?: { intervalMs?: number; max?: number },
  ) => {
    const nc = await conn(name);
    const server = new NatsJsonServer({
      nc,
      prefix,
      queue: 'credentials',
      maxRequestBytes: 1 << 20,
      drainTimeoutMs: 100,
      auth: new EdgeAuth(sealerOf('credentials'), tokens),
      ...(progress ? { progress } : {}),
    });
    server.addHandler(SealedValuesSeal.subject, async (req: Req) => {
      await behaviour(req, name);
      return { key_id: name, blob: currentRequestSignal()!.aborted ? 'aborted' : 'done' };
    });
    await new Promise<void>((r) => server.listen(r));
    await nc.flush();
    servers.push(server);
  };
  const caller = async (prefix: string, app: 'executor' | 'mcp-sync' = 'executor') =>
    new MessagingClient(await conn(`caller-${app}`), prefix, sealerOf(app), eventsOf(app));
  const seal = (
    m: MessagingClient,
    ref: string,
    opts: { signal?: AbortSignal; onProgress?: (p: RequestProgress) => void } = {},
  ) =>
    m.request(
      SealedValuesSeal,
      { org_id: 'rc', purpose: 'execution', ref, plaintext: '' },
      { timeoutMs: 30_000, ...opts },
    );
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => new Error('did not fail'),
      (e: unknown) => e,
    );
  const newPrefix = () => `rc${randomBytes(4).toString('hex')}`;

  /** A behaviour that holds each request until the test releases it or its signal aborts. */
  const holding =
    (held: Held[]): Behaviour =>
    async (req, replica) => {
      const signal = currentRequestSignal()!;
      const gate = deferred<void>();
      held.push({ ref: req.ref, replica, signal, release: () => gate.resolve() });
      await Promise.race([gate.promise, new Promise((r) => signal.addEventListener('abort', r, { once: true }))]);
    };

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await Promise.all(conns.map((c) => c.close().catch(() => undefined)));
  });

  it("aborts the serving replica's handler signal with REQUEST_CANCELLED, on that replica and that request only", async () => {
    const prefix = newPrefix();
    const held: Held[] = [];
    await replica(prefix, 'replica-a', holding(held));
    await replica(prefix, 'replica-b', holding(held));
    const executor = await caller(prefix);
    // Requests until each replica holds at least one (the queue group picks at random).
    const calls: Array<{ ref: string; ctrl: AbortController; reply: Promise<unknown> }> = [];
    for (let i = 0; i < 40 && new Set(held.map((h) => h.replica)).size < 2; i++) {
      const ctrl = new AbortController();
      const ref = `r${i}`;
      calls.push({ ref, ctrl, reply: seal(executor, ref, { signal: ctrl.signal }).catch((e: unknown) => e) });
      await expectEventually(() => expect(held.map((h) => h.ref)).toContain(ref));
    }
    expect(new Set(held.map((h) => h.replica))).toEqual(new Set(['replica-a', 'replica-b']));
    const target = held[0]!;
    const call = calls.find((c) => c.ref === target.ref)!;
    call.ctrl.abort();
    // The caller stops waiting at once, with the typed reason.
    expect(await call.reply).toMatchObject({ code: 'REQUEST_CANCELLED', retryable: false });
    // The replica holding it is told: its handler's signal aborts with REQUEST_CANCELLED.
    await expectEventually(() => expect(target.signal.aborted).toBe(true));
    expect(target.signal.reason).toBeInstanceOf(ToolplaneError);
    expect((target.signal.reason as ToolplaneError).code).toBe('REQUEST_CANCELLED');
    // Every other request, on either replica, runs on and is answered.
    for (const h of held.filter((x) => x !== target)) h.release();
    const others = await Promise.all(calls.filter((c) => c !== call).map((c) => c.reply));
    expect(others.map((r) => (r as { blob: string }).blob)).toEqual(others.map(() => 'done'));
    expect(held.filter((h) => h.signal.aborted).map((h) => h.ref)).toEqual([target.ref]);
  });

  it('ignores a forged cancel: unsealed, sealed by another service, or from a plain client with the seen token', async () => {
    const prefix = newPrefix();
    const held: Held[] = [];
    await replica(prefix, 'replica-f', holding(held));
    const executor = await caller(prefix);
    const other = await caller(prefix, 'mcp-sync');
    // An eavesdropper on the open bus sees each request's cancel token (it cannot seal a cancel).
    const spy = await conn('spy');
    const seen = new Map<string, string>();
    spy.subscribe(`${prefix}.${SealedValuesSeal.subject}`, {
      callback: (_e, m) => void seen.set(String(seen.size), m.headers?.get(Headers.CANCEL_TOKEN) ?? ''),
    });
    await spy.flush();
    const victimCtrl = new AbortController();
    const victim = seal(executor, 'victim', { signal: victimCtrl.signal }).catch((e: unknown) => e);
    await expectEventually(() => expect(held.map((h) => h.ref)).toEqual(['victim']));
    const probeCtrl = new AbortController();
    const probe = failure(seal(executor, 'probe', { signal: probeCtrl.signal }));
    await expectEventually(() => expect(held.map((h) => h.ref)).toEqual(['victim', 'probe']));
    const token = seen.get('0')!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{16}$/);

    const cancelSubject = `${prefix}.${REQUEST_CANCELS.credentials.subject}`;
    // Unsealed, with the right token.
    spy.publish(cancelSubject, enc({ token }));
    // Claiming to be the executor, with a seal header it cannot make.
    const h = natsHeaders();
    h.set(Headers.SERVICE_SEAL, `v1 executor ${Date.now()} ${token}`);
    spy.publish(cancelSubject, enc({ token }), { headers: h });
    await spy.flush();
    // Sealed by a real service — but not the one that sent the request.
    other.notify(REQUEST_CANCELS.credentials, { token });
    await other.nc.flush();
    // Then a genuine cancel of another request, after the forgeries on the replica's connection.
    probeCtrl.abort();
    expect(await probe).toMatchObject({ code: 'REQUEST_CANCELLED' });
    await expectEventually(() => expect(held[1]!.signal.aborted).toBe(true));
    expect(held[0]!.signal.aborted).toBe(false);
    held[0]!.release();
    expect(await victim).toEqual({ key_id: 'replica-f', blob: 'done' });
  });

  it('sends no cancel token or progress request when the caller has neither a signal nor onProgress', async () => {
    const prefix = newPrefix();
    let reporter: unknown = 'unset';
    await replica(prefix, 'replica-plain', async () => {
      reporter = currentProgressReporter();
      reportProgress({ progress: 1 }); // nobody asked: nothing is sent
    });
    const executor = await caller(prefix);
    const spy = await conn('spy-plain');
    const requests: Msg[] = [];
    const inbox: Msg[] = [];
    spy.subscribe(`${prefix}.${SealedValuesSeal.subject}`, { callback: (_e, m) => void requests.push(m) });
    spy.subscribe('_INBOX.>', { callback: (_e, m) => void inbox.push(m) });
    await spy.flush();
    expect(await seal(executor, 'plain')).toEqual({ key_id: 'replica-plain', blob: 'done' });
    expect(reporter).toBeUndefined();
    await expectEventually(() => expect(requests).toHaveLength(1));
    expect([requests[0]!.headers?.has(Headers.CANCEL_TOKEN), requests[0]!.headers?.has(Headers.PROGRESS)]).toEqual([
      false,
      false,
    ]);
    // The one message on the caller's inbox was the reply (the spy's flush comes after it).
    await spy.flush();
    expect(inbox.filter((m) => m.subject.startsWith('_INBOX.') && m.headers?.has(Headers.PROGRESS))).toEqual([]);
  });

  it('delivers progress in order before the reply, and the reply after it', async () => {
    const prefix = newPrefix();
    const seen = Array.from({ length: 5 }, () => deferred<void>());
    await replica(prefix, 'replica-p', async () => {
      for (let i = 1; i <= 5; i++) {
        reportProgress({ progress: i, total: 5, message: `step ${i}` });
        await seen[i - 1]!.promise; // the next report only once the caller has this one
      }
    });
    const executor = await caller(prefix);
    const events: string[] = [];
    const reply = seal(executor, 'progress', {
      onProgress: (p) => {
        events.push(`${p.progress}/${p.total} ${p.message}`);
        seen[p.progress - 1]?.resolve();
      },
    }).then((r) => events.push(`reply ${r.blob}`));
    await reply;
    expect(events).toEqual(['1/5 step 1', '2/5 step 2', '3/5 step 3', '4/5 step 4', '5/5 step 5', 'reply done']);
  });

  it('paces a burst of reports (the first few at once, the rest coalesced: the latest wins) and caps the messages of a request', async () => {
    const prefix = newPrefix();
    const last = deferred<void>();
    await replica(prefix, 'replica-burst', async () => {
      for (let i = 1; i <= 100; i++) reportProgress({ progress: i });
      await last.promise;
    });
    const executor = await caller(prefix);
    const burst: number[] = [];
    await seal(executor, 'burst', {
      onProgress: (p) => {
        burst.push(p.progress);
        if (p.progress === 100) last.resolve();
      },
    });
    // The bucket's burst at once, the ones after it coalesced into the latest one.
    expect(burst).toEqual([...Array.from({ length: PROGRESS_BURST }, (_, i) => i + 1), 100]);

    const capped = newPrefix();
    await replica(
      capped,
      'replica-cap',
      async () => {
        for (let i = 1; i <= 10; i++) reportProgress({ progress: i });
      },
      { intervalMs: 0, max: 3 },
    );
    const events: string[] = [];
    const r = await seal(await caller(capped), 'cap', { onProgress: (p) => events.push(`p${p.progress}`) });
    events.push(`reply ${r.blob}`);
    expect(events).toEqual(['p1', 'p2', 'p3', 'reply done']);
  });

  it('ignores progress forged on the reply subject: unsealed, sealed by another service, or a replay', async () => {
    const prefix = newPrefix();
    const forged = deferred<void>();
    const first = deferred<void>();
    const replayed = deferred<void>();
    const second = deferred<void>();
    await replica(prefix, 'replica-g', async () => {
      await forged.promise;
      reportProgress({ progress: 1 });
      await first.promise;
      await replayed.promise;
      reportProgress({ progress: 2 });
      await second.promise; // the reply only once the caller has it (a report still waiting is dropped by the reply)
    });
    const executor = await caller(prefix);
    const spy = await conn('spy-progress');
    const requests: Msg[] = [];
    const progress: Msg[] = [];
    spy.subscribe(`${prefix}.${SealedValuesSeal.subject}`, { callback: (_e, m) => void requests.push(m) });
    spy.subscribe('_INBOX.>', { callback: (_e, m) => void (m.headers?.has(Headers.PROGRESS) && progress.push(m)) });
    await spy.flush();
    const got: number[] = [];
    const reply = seal(executor, 'forged', {
      onProgress: (p) => {
        got.push(p.progress);
        if (p.progress === 1) first.resolve();
        if (p.progress === 2) second.resolve();
      },
    });
    await expectEventually(() => expect(requests).toHaveLength(1));
    const request = requests[0]!;
    const replySubject = request.reply!;
    const nonce = request.headers!.get(Headers.SERVICE_SEAL).split(' ')[3]!;
    const send = (seq: number, data: Uint8Array, sealHeader?: string) => {
      const h = natsHeaders();
      h.set(Headers.PROGRESS, String(seq));
      if (sealHeader) h.set(Headers.SERVICE_SEAL, sealHeader);
      spy.publish(replySubject, data, { headers: h });
    };
    // Unsealed, low and high sequence numbers; then sealed by mcp-sync (not the serving app).
    send(1, enc({ progress: 666 }));
    send(99, enc({ progress: 667 }));
    const bySync = sealerOf('mcp-sync').sealProgress(
      `${prefix}.${SealedValuesSeal.subject}`,
      'executor',
      nonce,
      1,
      enc({ progress: 668 }),
    );
    send(1, bySync.data, bySync.header);
    await spy.flush();
    forged.resolve();
    await first.promise;
    // The genuine first report, replayed.
    const genuine = await expectEventually(
      () => progress.find((m) => m.headers?.get(Headers.SERVICE_SEAL).startsWith('v1 credentials ')) ?? false,
    );
    send(1, genuine.data, genuine.headers!.get(Headers.SERVICE_SEAL));
    await spy.flush();
    replayed.resolve();
    expect(await reply).toEqual({ key_id: 'replica-g', blob: 'done' });
    expect(got).toEqual([1, 2]);
  });
});
