import { ErrorCode, ToolplaneError } from '@toolplane/contracts';
import { oneShotArgs, prepareSupportDir, readableByOthers, seccompProgram } from '@toolplane/sandbox';
import { existsSync } from 'node:fs';
import { STDIO_HOME, StdioAllowEntry } from '../mcp-sync.config';

export { STDIO_HOME, StdioAllowEntry };

/** Variables that change what a program loads or runs: never settable by a tenant. */
const INJECTION =
  /^(LD_|DYLD_|NODE_OPTIONS$|NODE_PATH$|PYTHON|PERL5|PERLLIB$|RUBY|BASH_ENV$|ENV$|SHELLOPTS$|PS4$|GCONV_PATH$|MALLOC_|GLIBC_TUNABLES$|HOSTALIASES$|LOCALDOMAIN$|RES_OPTIONS$)/;

export interface StdioSpawn {
  command: string;
  args: string[];
  env: Record<string, string>;
  uid?: number;
  gid?: number;
}

export interface StdioPolicyOptions {
  allowed: readonly StdioAllowEntry[];
  isolation: 'bwrap' | 'unsafe';
  bwrapPath: string;
  workRoot: string;
  runAs?: { uid: number; gid: number };
}

const refused = (message: string, details?: Record<string, unknown>) =>
  new ToolplaneError(ErrorCode.MCP_COMMAND_REFUSED, message, details, false);

/**
 * Which stdio MCP servers may run, and how: a tenant names a command and arguments, but only an
 * operator's allowlist entry (MCP_STDIO_ALLOWED_COMMANDS: exact program, argument patterns)
 * makes it runnable, and it then runs in a one-shot bubblewrap sandbox like a package build of
 * runner-local: its own user, pid, mount, ipc and empty network namespaces, the tool seccomp
 * filter, no capabilities, no new privileges, an unprivileged uid, only system directories and
 * the entry's read paths (read-only), a fresh empty tmpfs as home and working directory, and exactly the
 * env the server's config gives — nothing of mcp-sync's environment, files or network.
 */
export class StdioPolicy {
  private supportDir?: Promise<string>;

  constructor(private readonly o: StdioPolicyOptions) {}

  /** Allowlisted programs and read paths the sandbox user cannot read (they would fail to start): to say so at start. */
  async unreadable(): Promise<string[]> {
    if (this.o.isolation === 'unsafe' || !this.o.runAs) return [];
    const paths = [...new Set(this.o.allowed.flatMap((e) => [e.command, ...e.read_paths]))];
    const checks = await Promise.all(paths.map(async (p) => ((await readableByOthers(p)) ? undefined : p)));
    return checks.filter((p): p is string => p !== undefined);
  }

  /** The allowlist entry of this command, or MCP_COMMAND_REFUSED naming why. */
  check(command: string, args: readonly string[], env: Record<string, string> = {}): StdioAllowEntry {
    const candidates = this.o.allowed.filter((e) => e.command === command);
    if (!candidates.length) {
      throw refused(
        `The stdio command ${command} is not allowed here: an operator lists the programs tenants may run in MCP_STDIO_ALLOWED_COMMANDS`,
        { command },
      );
    }
    const entry = candidates.find(
      (e) => e.args.length === args.length && e.args.every((p, i) => new RegExp(`^(?:${p})$`, 'u').test(args[i]!)),
    );
    if (!entry)
      throw refused(`The arguments of ${command} do not match what MCP_STDIO_ALLOWED_COMMANDS allows for it`, {
        command,
      });
    for (const name of Object.keys(env)) {
      if (entry.env ? !entry.env.includes(name) : INJECTION.test(name))
        throw refused(`The env var ${name} may not be set for ${command}`, { command, env: name });
    }
    return entry;
  }

  /** How to start the server: the command itself (isolation unsafe) or bwrap around it. */
  async spawnSpec(command: string, args: readonly string[], env: Record<string, string>): Promise<StdioSpawn> {
    const entry = this.check(command, args, env);
    const base = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8' };
    if (this.o.isolation === 'unsafe') return { command, args: [...args], env: { ...base, ...env } };
    const supportDir = await (this.supportDir ??= prepareSupportDir(
      this.o.workRoot,
      seccompProgram(),
      this.o.runAs?.uid ?? process.getuid?.() ?? 65534,
      this.o.runAs?.gid ?? process.getgid?.() ?? 65534,
    ));
    const readable = [...entry.read_paths.filter((p) => existsSync(p))];
    if (!command.startsWith('/usr/') && !readable.some((p) => command.startsWith(`${p}/`))) readable.push(command);
    return {
      command: this.o.bwrapPath,
      args: oneShotArgs({ supportDir, readable, home: STDIO_HOME, inheritEnv: true, command: [command, ...args] }),
      // bwrap passes its own environment on: exactly this (the server's env, never mcp-sync's).
      env: { ...base, HOME: STDIO_HOME, ...env },
      ...(this.o.runAs ? { uid: this.o.runAs.uid, gid: this.o.runAs.gid } : {}),
    };
  }
}
