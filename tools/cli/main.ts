#!/usr/bin/env node
/**
 * `toolplane`: the operator CLI, on @toolplane/client. Config from flags, env (TOOLPLANE_NATS_URL,
 * TOOLPLANE_TOKEN, TOOLPLANE_ORG, TOOLPLANE_PREFIX; TOOLPLANE_GATEWAY_URL for `mcp-url`) or a
 * profile file; `--json` for scripts.
 * Exit codes: 0 ok, 1 failed, 2 usage, 3 not found, 4 auth, 5 unavailable.
 */
import { Command, CommanderError } from 'commander';
import { ToolplaneError } from '@toolplane/client';
import { registerAdminCommands } from './admin.command';
import { type GlobalFlags } from './cli.config';
import { CliContext } from './cli.context';
import { ExitCode, exitCodeOf } from './cli.errors';
import { printError, printJson } from './cli.output';
import { registerConnectionsCommands } from './connections.command';
import { registerDoctorCommand } from './doctor.command';
import { registerEventsCommand } from './events.command';
import { registerMcpCommands } from './mcp.command';
import { registerMcpUrlCommand } from './mcp-url.command';
import { registerSchemaCommands } from './schema.command';
import { registerToolCommands } from './tools.command';
import { registerToolsetCommands } from './toolsets.command';

async function main(argv: string[]): Promise<number> {
  const program = new Command('toolplane');
  program
    .description('Toolplane operator CLI')
    .option('--json', 'machine-readable JSON output')
    .option('--nats-url <url>', 'NATS server (env TOOLPLANE_NATS_URL)')
    .option('--token <token>', 'org or operator token (env TOOLPLANE_TOKEN; prefer the env or a profile)')
    .option('--org <org_id>', 'org (env TOOLPLANE_ORG)')
    .option('--prefix <prefix>', 'subject prefix of the deployment (env TOOLPLANE_PREFIX)')
    .option(
      '--keys-dir <dir>',
      "the services' event verification keys, <app>.sign.pub (env TOOLPLANE_KEYS_DIR; default .toolplane/keys when present)",
    )
    .option('--profile <name>', 'profile of the profile file (TOOLPLANE_CONFIG, ~/.config/toolplane/profiles.json)')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  const ctx = new CliContext(() => program.opts<GlobalFlags>());
  registerToolCommands(program, ctx);
  registerSchemaCommands(program, ctx);
  registerAdminCommands(program, ctx);
  registerMcpCommands(program, ctx);
  registerMcpUrlCommand(program, ctx);
  registerConnectionsCommands(program, ctx);
  registerToolsetCommands(program, ctx);
  registerDoctorCommand(program, ctx);
  registerEventsCommand(program, ctx);
  for (const c of program.commands) c.exitOverride();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.OK;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
    const code = exitCodeOf(e);
    const json = argv.includes('--json');
    if (json) {
      const te = e instanceof ToolplaneError ? e : undefined;
      printJson({
        error: {
          code:
            te?.code ?? (code === ExitCode.USAGE ? 'USAGE' : code === ExitCode.UNAVAILABLE ? 'UNAVAILABLE' : 'FAILED'),
          message: (e as Error).message,
          retryable: te?.retryable ?? false,
          details: te?.details,
          trace_id: te?.trace_id,
        },
      });
    } else {
      printError(
        `error: ${e instanceof ToolplaneError ? `${e.code}: ` : ''}${(e as Error).message}${e instanceof ToolplaneError && e.trace_id ? ` (trace ${e.trace_id})` : ''}`,
      );
    }
    return code;
  } finally {
    await ctx.close();
  }
}

main(process.argv).then(
  (code) => process.exit(code),
  (e) => {
    printError(String(e));
    process.exit(ExitCode.FAILED);
  },
);
