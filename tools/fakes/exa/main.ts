/**
 * The Exa fake as a process:
 *
 *   node dist/tools/fakes/exa/main.js [--port N] [--host H] [--latency-ms N] [--api-key K]...
 *     [--fault unauthorized|rate_limited|server_error|malformed_json]
 *
 * Prints one JSON line `{"url"}` on stdout once it listens (point EXA_BASE_URL there) and stops on
 * SIGTERM or SIGINT.
 */
import { startExaFake, type ExaFault, type ExaFakeOptions } from './exa-fake';

const FAULTS: readonly ExaFault[] = ['unauthorized', 'rate_limited', 'server_error', 'malformed_json'];

function parseArgs(argv: string[]): ExaFakeOptions & { fault?: ExaFault } {
  const o: ExaFakeOptions & { fault?: ExaFault } = {};
  const int = (v: string, flag: string): number => {
    if (!/^\d+$/.test(v)) throw new Error(`${flag} takes a non-negative integer, got ${v}`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i]!;
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new Error(`${flag} needs a value`);
    switch (flag) {
      case '--port':
        o.port = int(v, flag);
        break;
      case '--host':
        o.host = v;
        break;
      case '--latency-ms':
        o.latencyMs = int(v, flag);
        break;
      case '--api-key':
        o.apiKeys = [...(o.apiKeys ?? []), v];
        break;
      case '--fault':
        if (!FAULTS.includes(v as ExaFault)) throw new Error(`--fault is one of ${FAULTS.join(', ')}, got ${v}`);
        o.fault = v as ExaFault;
        break;
      default:
        throw new Error(`unknown option ${flag}`);
    }
  }
  return o;
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const fake = await startExaFake(opts);
  fake.fault = opts.fault;
  process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
  const stop = (): void => void fake.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((e: Error) => {
  process.stderr.write(`exa fake: ${e.message}\n`);
  process.exit(1);
});
