import { connect, type NatsConnection } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';
import { RequestFailed, RequestMux } from '@toolplane/messaging';
import { natsUrl } from '../support/env';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** How a request failed: its RequestFailed reason, or what else it threw. */
async function failure(p: Promise<unknown>): Promise<RequestFailed> {
  try {
    await p;
  } catch (e) {
    if (e instanceof RequestFailed) return e;
    throw e;
  }
  throw new Error('the request did not fail');
}

describe('RequestMux (one inbox subscription per connection, real NATS)', () => {
  let caller: NatsConnection;
  let server: NatsConnection;
  let subject: string;

  beforeEach(async () => {
    caller = await connect({ servers: natsUrl(), name: 'mux-caller', noAsyncTraces: true });
    server = await connect({ servers: natsUrl(), name: 'mux-server' });
    subject = `test.mux.${randomBytes(4).toString('hex')}`;
  });

  afterEach(async () => {
    await caller.close().catch(() => undefined);
    await server.close().catch(() => undefined);
  });

  it('routes each reply to its own request, whatever order the replies come in', async () => {
    // Held until all 50 arrived, then answered in reverse order.
    const held: Array<{ respond: () => void }> = [];
    server.subscribe(subject, {
      callback: (_e, m) => {
        held.push({ respond: () => void m.respond(enc(`re:${dec(m.data)}`)) });
        if (held.length === 50) for (const h of held.reverse()) h.respond();
      },
    });
    await server.flush();
    const mux = new RequestMux(caller);
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => mux.request(subject, enc(`n${i}`), { timeoutMs: 10_000 })),
    );
    expect(replies.map((r) => dec(r.data))).toEqual(Array.from({ length: 50 }, (_, i) => `re:n${i}`));
    expect(mux.size).toBe(0);
  });

  it('says no responders when nobody serves the subject', async () => {
    const mux = new RequestMux(caller);
    const e = await failure(mux.request(`${subject}.nobody`, enc('x'), { timeoutMs: 30_000 }));
    expect(e.reason).toBe('no_responders');
    expect(mux.size).toBe(0);
  });

  it('times out, forgets the request, and drops its late reply', async () => {
    let late: (() => void) | undefined;
    server.subscribe(subject, {
      callback: (_e, m) => {
        late = () => void m.respond(enc('late'));
      },
    });
    await server.flush();
    const mux = new RequestMux(caller);
    const e = await failure(mux.request(subject, enc('x'), { timeoutMs: 200 }));
    expect(e.reason).toBe('timeout');
    expect(mux.size).toBe(0);
    late!();
    await server.flush();
    // The next request is answered with its own reply, not the late one.
    server.subscribe(`${subject}.next`, { callback: (_e, m) => void m.respond(enc('next')) });
    await server.flush();
    expect(dec((await mux.request(`${subject}.next`, enc('y'), { timeoutMs: 10_000 })).data)).toBe('next');
  });

  it("stops waiting when the caller's signal aborts, with the signal's reason", async () => {
    server.subscribe(subject, { callback: () => undefined });
    await server.flush();
    const mux = new RequestMux(caller);
    const ctrl = new AbortController();
    const why = new Error('deadline passed');
    const pending = failure(mux.request(subject, enc('x'), { timeoutMs: 60_000, signal: ctrl.signal }));
    expect(mux.size).toBe(1);
    ctrl.abort(why);
    const e = await pending;
    expect(e.reason).toBe('aborted');
    expect(e.abortReason).toBe(why);
    expect(mux.size).toBe(0);
    // Already aborted: refused before anything is sent.
    expect((await failure(mux.request(subject, enc('x'), { timeoutMs: 60_000, signal: ctrl.signal }))).reason).toBe(
      'aborted',
    );
  });

  it('fails every request in flight when the connection closes', async () => {
    server.subscribe(subject, { callback: () => undefined });
    await server.flush();
    const mux = new RequestMux(caller);
    const pending = Array.from({ length: 3 }, () => failure(mux.request(subject, enc('x'), { timeoutMs: 60_000 })));
    expect(mux.size).toBe(3);
    await caller.close();
    expect((await Promise.all(pending)).map((e) => e.reason)).toEqual(['closed', 'closed', 'closed']);
    expect(mux.size).toBe(0);
    // A closed connection refuses at once.
    expect((await failure(mux.request(subject, enc('x'), { timeoutMs: 60_000 }))).reason).toBe('closed');
  });

  it('carries headers to the server', async () => {
    server.subscribe(subject, { callback: (_e, m) => void m.respond(enc(m.headers?.get('x-probe') ?? 'none')) });
    await server.flush();
    const { headers } = await import('@nats-io/transport-node');
    const h = headers();
    h.set('x-probe', 'seen');
    const mux = new RequestMux(caller);
    expect(dec((await mux.request(subject, enc('x'), { timeoutMs: 10_000, headers: h })).data)).toBe('seen');
  });
});
