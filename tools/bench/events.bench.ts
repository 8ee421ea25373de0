/**
 * `npm run bench:events`: what an event's signature costs (issue 29 A), beside what a consumer did
 * before it existed (decode + contract check of the same payload).
 * - µs per sign (EventSigner: Ed25519 over the subject, id, publisher, time and body) and per
 *   verify (EventVerifier: headers parsed, publisher checked against publishedBy, Ed25519 verify,
 *   replay window), for a tool.updated of a realistic size;
 * - events per second one consumer receives over real NATS (NATS_URL, default 127.0.0.1:4222),
 *   verifying each and parsing its payload, against the same consumer parsing only.
 * BENCH_N (default 20000) events per case.
 */
import { connect, headers, type MsgHdrs } from '@nats-io/transport-node';
import { ToolUpdated } from '@toolplane/contracts';
import { ed25519PublicKey, eventSigningKey, generateX25519 } from '@toolplane/crypto';
import { decodeJson, EventSigner, EventVerifier, parseContract, StaticPublisherKeys } from '@toolplane/messaging';
import { randomUUID } from 'node:crypto';

const N = Number(process.env.BENCH_N ?? 20_000);
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

function perOp(n: number, fn: (i: number) => unknown): number {
  for (let i = 0; i < Math.min(n, 2000); i++) fn(n + i); // warm the JIT (on items of their own: an id verified twice is a replay)
  const t = performance.now();
  for (let i = 0; i < n; i++) fn(i);
  return ((performance.now() - t) * 1000) / n;
}

function payload(): unknown {
  const source = `def add(a: int, b: int = 2) -> int:\n    """Add two integers.\n\n    Args:\n        a (int): The first number.\n        b (int): The second number.\n    """\n    return a + b\n`;
  const tool = {
    id: `tool-${randomUUID()}`,
    tool_type: 'custom',
    description: 'Add two integers.',
    source_type: 'python',
    name: 'add',
    tags: ['math'],
    source_code: source,
    json_schema: {
      name: 'add',
      description: 'Add two integers.',
      parameters: {
        type: 'object',
        properties: {
          a: { type: 'integer', description: 'The first number.' },
          b: { type: 'integer', description: 'The second number.' },
        },
        required: ['a'],
      },
    },
    args_json_schema: null,
    return_char_limit: 50000,
    pip_requirements: [{ name: 'requests', version: '2.32.0' }],
    npm_requirements: null,
    default_requires_approval: null,
    enable_parallel_execution: false,
    created_by_id: null,
    last_updated_by_id: null,
    metadata_: null,
    project_id: null,
  };
  return {
    event_id: randomUUID(),
    occurred_at: new Date().toISOString(),
    org_id: 'acme',
    tool_id: tool.id,
    tool_name: 'add',
    tool,
  };
}

async function main(): Promise<void> {
  const seed = generateX25519().seed;
  const key = eventSigningKey(seed);
  const signer = new EventSigner('registry', key.privateKey);
  const keys = new StaticPublisherKeys({ registry: [ed25519PublicKey(key.publicKey)] });
  const subject = 'bench.toolplane.v1.events.tool.updated';
  const body = new TextEncoder().encode(JSON.stringify(payload()));

  const ids = Array.from({ length: N + 2000 }, () => randomUUID());
  const signed: MsgHdrs[] = [];
  const sign = perOp(N, (i) => {
    const h = headers();
    signer.sign(h, subject, ids[i]!, body);
    signed[i] = h;
  });
  const verifier = new EventVerifier(keys);
  const verify = perOp(N, (i) => {
    if (!verifier.verify(ToolUpdated.publishedBy, subject, signed[i], body).ok) throw new Error('did not verify');
  });
  // One event read by four subscriptions of one process (the executor reads a tool event in four places), each with its
  // own replay window: the signature is verified once, the other three find it in the verifier's cache.
  const fresh = ids.map((_, i) => {
    const h = headers();
    signer.sign(h, subject, `${ids[i]}-b`, body);
    return h;
  });
  const four = perOp(N, (i) => {
    for (let k = 0; k < 4; k++)
      if (!verifier.verify(ToolUpdated.publishedBy, subject, fresh[i], body, { replay: verifier.replayWindow() }).ok)
        throw new Error('did not verify');
  });
  const parse = perOp(N, () => parseContract(ToolUpdated.payload, decodeJson(body), 'bench'));

  // One consumer over real NATS: N signed events, received, verified and parsed; then the same parsed only.
  const pub = await connect({ servers: NATS_URL, name: 'bench-events-pub' });
  const sub = await connect({ servers: NATS_URL, name: 'bench-events-sub' });
  const rate = async (check: boolean): Promise<number> => {
    const live = `bench${randomUUID().slice(0, 8)}.toolplane.v1.events.tool.updated`;
    const v = new EventVerifier(keys);
    const hs = Array.from({ length: N }, () => {
      const h = headers();
      signer.sign(h, live, randomUUID(), body);
      return h;
    });
    let got = 0;
    let failed = 0;
    let t0 = 0;
    const done = new Promise<number>((resolve) => {
      sub.subscribe(live, {
        callback: (_e, m) => {
          if (got === 0) t0 = performance.now();
          if (check && !v.verify(ToolUpdated.publishedBy, m.subject, m.headers, m.data).ok) failed++;
          parseContract(ToolUpdated.payload, decodeJson(m.data), 'bench');
          if (++got === N) resolve(performance.now() - t0);
        },
      });
    });
    await sub.flush();
    // In rounds of 500 (the consumer shares this process: it reads while the publisher waits for the server).
    for (let i = 0; i < N; i++) {
      pub.publish(live, body, { headers: hs[i]! });
      if (i % 500 === 499) await pub.flush();
    }
    await pub.flush();
    const ms = await Promise.race([
      done,
      new Promise<number>((_, reject) =>
        setTimeout(() => reject(new Error(`only ${got} of ${N} events arrived (a slow consumer?)`)), 60_000).unref(),
      ),
    ]);
    if (failed) throw new Error(`${failed} events did not verify`);
    return (N - 1) / (ms / 1000);
  };
  const plain = await rate(false);
  const verified = await rate(true);
  await pub.close();
  await sub.close();

  const row = (what: string, v: string) => process.stdout.write(`${what.padEnd(62)} ${v}\n`);
  process.stdout.write(
    `events bench: tool.updated of ${body.byteLength} bytes, ${N} events per case (Node ${process.version})\n`,
  );
  row('sign (Ed25519, headers set)', `${sign.toFixed(1)} µs/event`);
  row('verify (headers, publishedBy, Ed25519, replay window)', `${verify.toFixed(1)} µs/event`);
  row('four subscriptions of one process verify one event (total)', `${four.toFixed(1)} µs/event`);
  row('baseline: decode + contract check of the payload', `${parse.toFixed(1)} µs/event`);
  row('one consumer over NATS, verify + parse', `${Math.round(verified)} events/s`);
  row('one consumer over NATS, parse only (before signatures)', `${Math.round(plain)} events/s`);
}

void main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
