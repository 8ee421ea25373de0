import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from './cli.errors';

/** Where the CLI connects, from flags, then env, then the profile file. */
export interface CliConfig {
  natsUrl: string;
  token?: string;
  org?: string;
  prefix: string;
  /** Where the services' event verification keys (`<app>.sign.pub`) are: events are checked against them. */
  keysDir?: string;
  json: boolean;
}

export interface GlobalFlags {
  natsUrl?: string;
  token?: string;
  org?: string;
  prefix?: string;
  keysDir?: string;
  profile?: string;
  json?: boolean;
}

/** `$TOOLPLANE_CONFIG`, else `~/.config/toolplane/profiles.json`: `{"<name>": {nats_url, token, org, prefix, keys_dir}}`. */
export function profilePath(): string {
  return process.env.TOOLPLANE_CONFIG ?? join(homedir(), '.config', 'toolplane', 'profiles.json');
}

export function loadConfig(flags: GlobalFlags): CliConfig {
  const name = flags.profile ?? process.env.TOOLPLANE_PROFILE_NAME ?? 'default';
  const path = profilePath();
  let profile: Record<string, string | undefined> = {};
  if (existsSync(path)) {
    const all = JSON.parse(readFileSync(path, 'utf8')) as Record<string, Record<string, string>>;
    profile = all[name] ?? {};
    if (flags.profile && !all[name]) throw new UsageError(`no profile ${name} in ${path}`);
  } else if (flags.profile) {
    throw new UsageError(`no profile file ${path}`);
  }
  return {
    natsUrl: flags.natsUrl ?? process.env.TOOLPLANE_NATS_URL ?? profile.nats_url ?? 'nats://127.0.0.1:4222',
    token: flags.token ?? process.env.TOOLPLANE_TOKEN ?? profile.token,
    org: flags.org ?? process.env.TOOLPLANE_ORG ?? profile.org,
    prefix: flags.prefix ?? process.env.TOOLPLANE_PREFIX ?? profile.prefix ?? '',
    // The development key directory `npm start` keeps, when the CLI runs beside it.
    keysDir:
      flags.keysDir ??
      process.env.TOOLPLANE_KEYS_DIR ??
      profile.keys_dir ??
      (existsSync('.toolplane/keys') ? '.toolplane/keys' : undefined),
    json: Boolean(flags.json),
  };
}
