import { ToolplaneClient } from '@toolplane/client';
import { loadConfig, type CliConfig, type GlobalFlags } from './cli.config';
import { UsageError } from './cli.errors';
import { printJson } from './cli.output';

/** What every command gets: the configuration and a client opened on first use. */
export class CliContext {
  private clientP?: Promise<ToolplaneClient>;
  private cfg?: CliConfig;

  constructor(private readonly flags: () => GlobalFlags) {}

  get config(): CliConfig {
    this.cfg ??= loadConfig(this.flags());
    return this.cfg;
  }

  get json(): boolean {
    return this.config.json;
  }

  /** The org of the configuration (required by every org-scoped command). */
  get org(): string {
    if (!this.config.org) throw new UsageError('no org: pass --org, set TOOLPLANE_ORG or add org to the profile');
    return this.config.org;
  }

  client(): Promise<ToolplaneClient> {
    const c = this.config;
    if (!c.token) throw new UsageError('no token: pass --token, set TOOLPLANE_TOKEN or add token to the profile');
    this.clientP ??= ToolplaneClient.connect({
      nats: { servers: c.natsUrl, name: 'toolplane-cli', maxReconnectAttempts: 0 },
      token: c.token,
      org: c.org,
      prefix: c.prefix,
      ...(c.keysDir ? { events: { keysDir: c.keysDir } } : {}),
    });
    return this.clientP;
  }

  /** `--json`: the value as JSON; otherwise the human rendering. */
  out(value: unknown, human: () => void): void {
    if (this.json) printJson(value);
    else human();
  }

  async close(): Promise<void> {
    if (this.clientP) await (await this.clientP.catch(() => undefined))?.close();
  }
}
