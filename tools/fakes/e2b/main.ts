/**
 * The E2B fake as a process:
 *
 *   node dist/tools/fakes/e2b/main.js [--port N] [--host H] [--create-latency-ms N]
 *     [--isolation bwrap|process] [--api-key K]... [--readable PATH]... [--work-root DIR]
 *
 * Prints one JSON line `{"apiUrl", "sandboxUrl", "domain"}` on stdout once it listens (point
 * E2B_API_URL and E2B_SANDBOX_URL there), and stops cleanly — every sandbox killed, its
 * directories removed — on SIGTERM or SIGINT.
 */
import { startE2bFake, type E2bFakeOptions } from './e2b-fake';

function parseArgs(argv: string[]): E2bFakeOptions {
  const o: E2bFakeOptions = {};
  const value = (i: number, flag: string): string => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new Error(`${flag} needs a value`);
    return v;
  };
  const int = (v: string, flag: string): number => {
    if (!/^\d+$/.test(v)) throw new Error(`${flag} takes a non-negative integer, got ${v}`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i]!;
    const v = value(i, flag);
    switch (flag) {
      case '--port':
        o.port = int(v, flag);
        break;
      case '--host':
        o.host = v;
        break;
      case '--create-latency-ms':
        o.createLatencyMs = int(v, flag);
        break;
      case '--isolation':
        if (v !== 'bwrap' && v !== 'process') throw new Error(`--isolation is bwrap or process, got ${v}`);
        o.isolation = v;
        break;
      case '--api-key':
        o.apiKeys = [...(o.apiKeys ?? []), v];
        break;
      case '--readable':
        o.readable = [...(o.readable ?? []), v];
        break;
      case '--work-root':
        o.workRoot = v;
        break;
      default:
        throw new Error(`unknown option ${flag}`);
    }
  }
  return o;
}

async function main(): Promise<void> {
  const fake = await startE2bFake(parseArgs(process.argv.slice(2)));
  process.stdout.write(
    `${JSON.stringify({ apiUrl: fake.apiUrl, sandboxUrl: fake.sandboxUrl, domain: fake.domain })}\n`,
  );
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    fake.close().then(
      () => process.exit(0),
      (e: Error) => {
        process.stderr.write(`e2b fake: stopping failed: ${e.message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e: Error) => {
  process.stderr.write(`e2b fake: ${e.message}\n`);
  process.exit(1);
});
