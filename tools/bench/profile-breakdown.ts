/**
 * Where the CPU of a call goes (issue 28), from the V8 CPU profiles a bench wrote with
 * BENCH_CPU_PROF=<dir> (`<dir>/<app>/*.cpuprofile`, and `<dir>/window.json`: the measured block on
 * the monotonic clock and the calls made in it). For each app, and for all of them together: self
 * and inclusive ms per call by category — crypto and sealing, validation (zod), JSON, spans,
 * fair queues, records (the executor's records, TypeORM, pg), the runner (cgroups, pipe protocol,
 * pool), socket writes (to NATS, and the others), the NATS client, the messaging plumbing, Nest and
 * rxjs, the MCP client and HTTP, GC, V8's own (program) time, the rest —
 * and the functions with the most self time.
 *
 *   npm run bench:profile -- <dir> [--calls N] [--top N]
 *
 * Self: a sample counts once, for the category of the function it was in; a native function with
 * no script (a builtin, e.g. writev or JSON.parse) counts for its nearest caller that has one.
 * Inclusive: a sample counts for every category on its stack (categories overlap; they do not sum).
 * Samples outside window.json's block are left out (the whole profile when there is none, or when
 * the clocks do not match: then pass --calls). Idle time is left out. A sample is on-thread wall
 * time, not CPU: a thread waiting for a core inside a write syscall counts, so on a busy box these
 * ms run above /proc's CPU per call (the benches' figures); read them as shares.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const REST = 'the rest';
const WRITES = 'socket writes to NATS (writeBuffer/writev under @nats-io)';
const OTHER_WRITES = 'other writes (pipes: sandboxes, logs; pg)';

/** Categories in the order a frame is matched (the first that fits). */
const CATEGORIES: ReadonlyArray<readonly [string, (f: CallFrame) => boolean]> = [
  ['GC', (f) => f.functionName === '(garbage collector)'],
  ['(program): V8 and native, no JS frame', (f) => f.functionName === '(program)'],
  [
    'crypto/sealing (node:crypto, service-seal, libs/crypto, tokens)',
    (f) => /^node:(internal\/)?crypto|service-seal|libs\/crypto\/|token-verifier|edge-auth|key-directory/.test(f.url),
  ],
  ['validation (zod)', (f) => /\/zod\//.test(f.url)],
  [
    'JSON encode/decode (codec, TextEncoder/Decoder)',
    (f) =>
      (f.url === '' && /^(parse|stringify|JSONParse|JSONStringify)$/.test(f.functionName)) ||
      /libs\/messaging\/src\/codec|node:internal\/encoding/.test(f.url),
  ],
  ['spans (@opentelemetry, libs/observability)', (f) => /@opentelemetry|libs\/observability\//.test(f.url)],
  ['fair queues (libs/platform fair-queue)', (f) => /fair-queue/.test(f.url)],
  [
    'records (executor records, typeorm, pg)',
    (f) => /apps\/executor\/src\/records|\/typeorm\/|\/pg\/|\/pg-protocol\/|\/pg-pool\//.test(f.url),
  ],
  [
    'runner: cgroups, pipe protocol, pool (apps/runner-local, libs/sandbox)',
    (f) => /apps\/runner-local\/|libs\/sandbox\//.test(f.url),
  ],
  [
    WRITES,
    (f) =>
      /^(writeBuffer|writev|writeGeneric|writevGeneric|_writeGeneric|_writev|handleWriteReq)$/.test(f.functionName) ||
      /node:internal\/stream_base_commons/.test(f.url),
  ],
  ['NATS client (@nats-io)', (f) => /@nats-io\//.test(f.url)],
  [
    'messaging plumbing (nats-json.server, request-mux, messaging-client)',
    (f) =>
      /libs\/messaging\/src\/(nats-json\.server|request-mux|messaging-client|request-context|trace-context)/.test(
        f.url,
      ),
  ],
  ['Nest, rxjs', (f) => /@nestjs\/|\/rxjs\//.test(f.url)],
  [
    'MCP client and HTTP (@modelcontextprotocol/sdk, undici, web streams, node:http)',
    (f) =>
      /@modelcontextprotocol\/|undici|eventsource|node:internal\/webstreams|node:_http|node:internal\/http|node:http/.test(
        f.url,
      ),
  ],
];
const IDLE = '(idle)';

function categoryOf(f: CallFrame): string {
  if (f.functionName === IDLE) return IDLE;
  for (const [name, test] of CATEGORIES) if (test(f)) return name;
  return REST;
}

interface Breakdown {
  self: Map<string, number>;
  incl: Map<string, number>;
  fns: Map<string, number>;
  totalMs: number;
  windowed: boolean;
}

function breakdown(p: CpuProfile, window?: { startUs: number; endUs: number }): Breakdown {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfCat = new Map<number, string>();
  const stackCats = new Map<number, Set<string>>();
  const selfFn = new Map<number, string>();
  const resolve = (id: number) => {
    if (selfCat.has(id)) return;
    const chain: ProfileNode[] = [];
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) chain.push(byId.get(x)!);
    const leaf = chain[0]!;
    let own = categoryOf(leaf.callFrame);
    if (own === REST && leaf.callFrame.url === '' && !leaf.callFrame.functionName.startsWith('(')) {
      const caller = chain.find((n) => n.callFrame.url !== '');
      if (caller) own = categoryOf(caller.callFrame);
    }
    // A write syscall: to the NATS socket when the NATS client is on the stack, else a pipe (a sandbox's) or pg.
    if (own === WRITES && !chain.some((n) => /@nats-io\//.test(n.callFrame.url))) own = OTHER_WRITES;
    selfCat.set(id, own);
    const cats = new Set(chain.map((n) => categoryOf(n.callFrame)));
    if (own === OTHER_WRITES) {
      cats.delete(WRITES);
      cats.add(OTHER_WRITES);
    }
    stackCats.set(id, cats);
    const named = chain.find((n) => n.callFrame.url !== '') ?? leaf;
    selfFn.set(
      id,
      `${leaf.callFrame.functionName || '(anonymous)'} ${named.callFrame.url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/')}:${named.callFrame.lineNumber + 1}`,
    );
  };
  const useWindow = !!window && window.startUs >= p.startTime && window.endUs <= p.endTime + 1_000_000;
  const out: Breakdown = { self: new Map(), incl: new Map(), fns: new Map(), totalMs: 0, windowed: useWindow };
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    if (useWindow && (t < window.startUs || t > window.endUs)) continue;
    const ms = (p.timeDeltas[i + 1] ?? 0) / 1000;
    const id = p.samples[i]!;
    resolve(id);
    const own = selfCat.get(id)!;
    if (own === IDLE) continue;
    out.totalMs += ms;
    add(out.self, own, ms);
    for (const c of stackCats.get(id)!) if (c !== IDLE) add(out.incl, c, ms);
    add(out.fns, selfFn.get(id)!, ms);
  }
  return out;
}

function latestProfile(dir: string): string | undefined {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(dir, f));
  return files.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
}

function main(): void {
  const args = process.argv.slice(2);
  const opt = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args.splice(i, 2)[1] : undefined;
  };
  const callsArg = opt('--calls');
  const top = Number(opt('--top') ?? 12);
  const dir = args[0];
  if (!dir) {
    process.stderr.write('usage: profile-breakdown <BENCH_CPU_PROF dir> [--calls N] [--top N]\n');
    process.exit(2);
  }
  let window: { label: string; startUs: number; endUs: number; calls: number } | undefined;
  try {
    window = JSON.parse(readFileSync(join(dir, 'window.json'), 'utf8')) as typeof window;
  } catch {
    window = undefined;
  }
  const calls = Number(callsArg ?? window?.calls ?? NaN);
  if (!(calls > 0)) {
    process.stderr.write('no window.json with calls in the directory: pass --calls N (the calls the profiles cover)\n');
    process.exit(2);
  }
  const perApp: Array<[string, Breakdown]> = [];
  for (const app of readdirSync(dir).sort()) {
    if (!statSync(join(dir, app)).isDirectory()) continue;
    const file = latestProfile(join(dir, app));
    if (!file) continue;
    const b = breakdown(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, window);
    if (b.totalMs / calls < 0.005) continue; // not on the call path
    perApp.push([app, b]);
  }
  const say = (s: string) => process.stdout.write(`${s}\n`);
  say(
    `CPU profile breakdown of ${dir}: ${window ? `"${window.label}", ` : ''}${calls} calls; ms per call (self / inclusive)`,
  );
  const names = [...CATEGORIES.map(([n]) => n), OTHER_WRITES, REST];
  const f = (v: number | undefined) => ((v ?? 0) / calls).toFixed(3).padStart(7);
  const table = (title: string, b: Breakdown) => {
    say('');
    say(
      `${title}: ${(b.totalMs / calls).toFixed(3)} ms per call on JS threads (idle left out)${b.windowed ? '' : ' — WHOLE PROFILE (no matching window: startup and every case included)'}`,
    );
    say(`  ${'category'.padEnd(72)} ${'self'.padStart(7)} ${'incl'.padStart(7)}`);
    for (const n of names)
      if ((b.self.get(n) ?? 0) + (b.incl.get(n) ?? 0) > 0)
        say(`  ${n.padEnd(72)} ${f(b.self.get(n))} ${f(b.incl.get(n))}`);
  };
  const all: Breakdown = {
    self: new Map(),
    incl: new Map(),
    fns: new Map(),
    totalMs: 0,
    windowed: perApp.every(([, b]) => b.windowed),
  };
  for (const [app, b] of perApp) {
    table(app, b);
    all.totalMs += b.totalMs;
    for (const k of ['self', 'incl'] as const) for (const [c, v] of b[k]) all[k].set(c, (all[k].get(c) ?? 0) + v);
    say(`  top self functions:`);
    for (const [fn, v] of [...b.fns.entries()].sort((x, y) => y[1] - x[1]).slice(0, top)) say(`    ${f(v)}  ${fn}`);
  }
  table(`all profiled apps (${perApp.map(([a]) => a).join(', ')})`, all);
}

main();
