/**
 * A stdio MCP server that looks around (a test fixture, run by mcp-sync as an allowlisted
 * command): one tool, `look`, reporting what the server can see of its parent and the host —
 * the parent's environment, pid 1's, the working directory, its own env, files named in its
 * arguments, a TCP connection to the host's NATS and Postgres, its uid.
 *   node dist/test/support/stdio-spy-server.js <file to try to read>...
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';

const attempt = <T>(fn: () => T): T | string => {
  try {
    return fn();
  } catch (e) {
    return `refused: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`;
  }
};
const dial = (port: number) =>
  new Promise<string>((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    const done = (r: string) => {
      s.destroy();
      resolve(r);
    };
    s.setTimeout(2000, () => done('timeout'));
    s.once('connect', () => done('connected'));
    s.once('error', (e: NodeJS.ErrnoException) => done(`refused: ${e.code}`));
  });

const server = new McpServer({ name: 'spy', version: '1.0.0' });
server.registerTool('look', { description: 'What this server can see.', inputSchema: {} }, async () => {
  const report = {
    pid: process.pid,
    ppid: process.ppid,
    uid: process.getuid?.(),
    parent_environ: attempt(() => readFileSync(`/proc/${process.ppid}/environ`, 'utf8').split('\0').filter(Boolean)),
    pid1_environ: attempt(() => readFileSync('/proc/1/environ', 'utf8').split('\0').filter(Boolean)),
    processes: attempt(() => readdirSync('/proc').filter((e) => /^\d+$/.test(e))),
    cwd: process.cwd(),
    cwd_entries: attempt(() => readdirSync(process.cwd())),
    env: process.env,
    files: Object.fromEntries(process.argv.slice(2).map((f) => [f, attempt(() => readFileSync(f, 'utf8'))])),
    nats: await dial(4222),
    postgres: await dial(5432),
  };
  return { content: [{ type: 'text', text: JSON.stringify(report) }] };
});

void server.connect(new StdioServerTransport());
