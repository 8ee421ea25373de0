import type { Command } from 'commander';
import { connect } from '@nats-io/transport-node';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Socket } from 'node:net';
import type { CliContext } from './cli.context';
import { printTable } from './cli.output';

/** Default health ports of the apps (each app's *.config.ts); `--health app=port,…` or TOOLPLANE_HEALTH_PORTS override. */
const DEFAULT_HEALTH_PORTS: Record<string, number> = {
  registry: 8081,
  schema: 8082,
  executor: 8083,
  'runner-local': 8084,
  credentials: 8085,
  'mcp-sync': 8086,
};

interface Check {
  check: string;
  ok: boolean;
  detail: string;
  fix?: string;
}

function parsePorts(spec: string | undefined): Record<string, number> {
  if (!spec) return DEFAULT_HEALTH_PORTS;
  if (spec.trim().startsWith('{')) return JSON.parse(spec) as Record<string, number>;
  return Object.fromEntries(
    spec
      .split(',')
      .map((p) => p.split('='))
      .map(([k, v]) => [k!.trim(), Number(v)]),
  );
}

function tcp(host: string, port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = new Socket();
    s.setTimeout(timeoutMs, () => s.destroy(new Error('timed out')));
    s.once('error', reject);
    s.connect(port, host, () => {
      s.end();
      resolve();
    });
  });
}

async function checkNats(url: string): Promise<Check> {
  try {
    const nc = await connect({ servers: url, timeout: 2_000, maxReconnectAttempts: 0 });
    const rtt = await nc.rtt();
    const info = nc.info;
    await nc.close();
    return {
      check: 'nats',
      ok: true,
      detail: `${url} v${info?.version ?? '?'} jetstream=${info?.jetstream ? 'yes' : 'no'} rtt ${rtt} ms`,
    };
  } catch (e) {
    return {
      check: 'nats',
      ok: false,
      detail: `${url}: ${(e as Error).message}`,
      fix: 'start nats-server with -js, or set TOOLPLANE_NATS_URL',
    };
  }
}

async function checkPostgres(url: string): Promise<Check[]> {
  const u = new URL(url);
  try {
    await tcp(u.hostname, Number(u.port || 5432), 2_000);
  } catch (e) {
    return [
      {
        check: 'postgres',
        ok: false,
        detail: `${u.hostname}:${u.port || 5432}: ${(e as Error).message}`,
        fix: 'start PostgreSQL ≥ 15, or set DATABASE_URL',
      },
    ];
  }
  try {
    const { Client } = await import('pg');
    const c = new Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    await c.connect();
    const before = Date.now();
    const r = await c.query<{ now: Date; version: string }>('select now() as now, version() as version');
    const skew = r.rows[0]!.now.getTime() - (before + Date.now()) / 2;
    await c.end();
    const skewOk = Math.abs(skew) < 2_000;
    return [
      { check: 'postgres', ok: true, detail: r.rows[0]!.version.split(',')[0]! },
      {
        check: 'time skew',
        ok: skewOk,
        detail: `${Math.round(skew)} ms against the database clock`,
        fix: skewOk ? undefined : 'sync the clocks (NTP): tokens and deadlines compare times',
      },
    ];
  } catch (e) {
    return [
      {
        check: 'postgres',
        ok: false,
        detail: (e as Error).message,
        fix: 'check DATABASE_URL (user, database, password)',
      },
    ];
  }
}

async function checkService(app: string, port: number): Promise<Check> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) });
    const body = await res.text();
    return res.ok
      ? { check: app, ok: true, detail: `ready (:${port})` }
      : {
          check: app,
          ok: false,
          detail: `not ready (:${port}): ${body.slice(0, 120)}`,
          fix: `look at the ${app} logs: a dependency it needs is down`,
        };
  } catch (e) {
    return {
      check: app,
      ok: false,
      detail: `no answer on :${port} (${(e as Error).cause ? String((e as { cause: Error }).cause.message ?? '') : (e as Error).message})`,
      fix: `start ${app} (npm start runs every app)`,
    };
  }
}

function checkSandbox(): Check[] {
  const bwrap = spawnSync('bwrap', ['--version'], { encoding: 'utf8' });
  const cgroup = existsSync('/sys/fs/cgroup/memory')
    ? 'v1'
    : existsSync('/sys/fs/cgroup/cgroup.controllers')
      ? 'v2'
      : null;
  return [
    bwrap.status === 0
      ? { check: 'bubblewrap', ok: true, detail: bwrap.stdout.trim() }
      : {
          check: 'bubblewrap',
          ok: false,
          detail: 'bwrap not found',
          fix: 'apt-get install bubblewrap (runner-local needs it)',
        },
    cgroup
      ? { check: 'cgroups', ok: true, detail: cgroup }
      : {
          check: 'cgroups',
          ok: false,
          detail: 'no cgroup mount',
          fix: 'mount cgroups (runner-local limits memory and pids with them)',
        },
  ];
}

export function registerDoctorCommand(program: Command, ctx: CliContext): void {
  program
    .command('doctor')
    .description('check NATS, Postgres, every service, sandbox prerequisites and the clock, and say what to fix')
    .option('--health <app=port,…>', 'health ports of the apps (default: their defaults; env TOOLPLANE_HEALTH_PORTS)')
    .option('--database-url <url>', 'Postgres to check (env DATABASE_URL)')
    .action(async (o: { health?: string; databaseUrl?: string }) => {
      const ports = parsePorts(o.health ?? process.env.TOOLPLANE_HEALTH_PORTS);
      const checks: Check[] = [await checkNats(ctx.config.natsUrl)];
      checks.push(
        ...(await checkPostgres(
          o.databaseUrl ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
        )),
      );
      checks.push(...(await Promise.all(Object.entries(ports).map(([app, port]) => checkService(app, port)))));
      checks.push(...checkSandbox());
      const ok = checks.every((c) => c.ok);
      ctx.out({ ok, checks }, () =>
        printTable(
          checks.map((c) => ({ ...c, ok: c.ok ? 'ok' : 'FAIL', fix: c.fix ?? '' })),
          ['check', 'ok', 'detail', 'fix'],
        ),
      );
      if (!ok) process.exitCode = 1;
    });
}
