import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { StdioSpawn } from './stdio-policy';

/**
 * MCP over a child's stdin/stdout, for a server started as StdioPolicy says: with exactly its
 * env (the SDK's StdioClientTransport adds the parent's HOME, PATH, USER… and cannot change
 * user), as an unprivileged uid, in its own process group so that closing ends all of it.
 */
export class SandboxedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child?: ChildProcessWithoutNullStreams;
  private readonly buffer = new ReadBuffer();

  constructor(
    private readonly spec: () => Promise<StdioSpawn>,
    private readonly onStderr: (chunk: string) => void,
  ) {}

  async start(): Promise<void> {
    if (this.child) throw new Error('already started');
    const s = await this.spec();
    await new Promise<void>((resolve, reject) => {
      const child = spawn(s.command, s.args, {
        env: s.env,
        cwd: '/',
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
        ...(s.uid !== undefined ? { uid: s.uid, gid: s.gid } : {}),
      });
      this.child = child;
      child.once('error', (e) => {
        reject(e);
        this.onerror?.(e);
      });
      child.once('spawn', () => resolve());
      child.once('close', () => {
        this.child = undefined;
        this.onclose?.();
      });
      child.stdin.on('error', (e) => this.onerror?.(e));
      child.stdout.on('data', (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.buffer.readMessage();
          } catch (e) {
            this.onerror?.(e as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      child.stderr.on('data', (d: Buffer) => this.onStderr(d.toString()));
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin) return Promise.reject(new Error('Not connected'));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', () => resolve());
    });
  }

  /** Ends stdin, then kills the whole process group (bubblewrap takes its sandbox with it). */
  async close(): Promise<void> {
    const child = this.child;
    this.buffer.clear();
    if (!child) return;
    const closed = new Promise<void>((r) => child.once('close', () => r()));
    child.stdin.end();
    await Promise.race([closed, new Promise((r) => setTimeout(r, 1000).unref())]);
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      await Promise.race([closed, new Promise((r) => setTimeout(r, 2000).unref())]);
    }
  }
}
