import { join } from 'node:path';
import { ROOT } from './env';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
export const EVERYTHING = join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
export const MEMORY = join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js');
export const SPY = join(ROOT, 'dist', 'test', 'support', 'stdio-spy-server.js');

/**
 * The stdio MCP servers the test stacks allow (MCP_STDIO_ALLOWED_COMMANDS), as an operator would
 * list them: the reference servers from npm and the test's spy, on this Node, reading only
 * node_modules (and the spy's own directory).
 */
export function testStdioAllowlist(): string {
  const node = process.execPath;
  const modules = join(ROOT, 'node_modules');
  return JSON.stringify([
    { command: node, args: [escape(EVERYTHING), 'stdio'], read_paths: [modules] },
    { command: node, args: [escape(MEMORY)], read_paths: [modules], env: ['MEMORY_FILE_PATH'] },
    { command: node, args: [escape(SPY), '/[^\\u0000]*'], read_paths: [modules, join(ROOT, 'dist', 'test', 'support')] },
  ]);
}
