/**
 * A Postgres cluster and a NATS server of a test's own, for tests that stop and restart them:
 * the machine's shared ones serve every other test file running at the same time and must never
 * be restarted. Postgres: a throwaway cluster (initdb) on a free port, run as the `postgres` user
 * when the test runs as root (initdb and postgres refuse root). NATS: nats-server with JetStream
 * and its own store directory (kept across restarts, as JetStream's file storage is).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './stack';

export interface PrivatePostgres {
  url: string;
  /** Stops the cluster (`immediate`: like a crash, no checkpoint). */
  stop(mode?: 'fast' | 'immediate'): void;
  start(): void;
  destroy(): void;
}

function postgresBin(): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'initdb'))) : [];
  if (!versions.length)
    throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql (initdb, pg_ctl): install postgresql');
  return join(base, versions.sort((a, b) => Number(b) - Number(a))[0]!, 'bin');
}

function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid))
    throw new Error('running as root, but there is no postgres user to run a private cluster as');
  return { uid, gid };
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBin();
  const user = postgresUser();
  const dir = mkdtempSync(join(tmpdir(), 'tp-pg-'));
  chmodSync(dir, 0o755);
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const port = await freePort();
  const run = (cmd: string, args: string[]) => {
    const r = spawnSync(join(bin, cmd), args, { encoding: 'utf8', ...(user ?? {}), cwd: dir, timeout: 120_000 });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
  };
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const pg: PrivatePostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: () =>
      run('pg_ctl', [
        '-D',
        data,
        '-l',
        join(dir, 'server.log'),
        '-w',
        '-t',
        '60',
        '-o',
        `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`,
        'start',
      ]),
    stop: (mode = 'fast') => run('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']),
    destroy: () => {
      try {
        pg.stop('immediate');
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  pg.start();
  // Whatever happens to the test process, the cluster goes with it.
  process.once('exit', () => pg.destroy());
  return pg;
}

export interface PrivateNats {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

const NATS_SERVER = process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server';

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export async function startPrivateNats(): Promise<PrivateNats> {
  const dir = mkdtempSync(join(tmpdir(), 'tp-nats-'));
  const port = await freePort();
  let proc: ChildProcess | undefined;
  const nats: PrivateNats = {
    url: `nats://127.0.0.1:${port}`,
    async start() {
      proc = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(dir, 'js')], {
        stdio: 'ignore',
      });
      for (let i = 0; i < 300 && !(await listening(port)); i++) await new Promise((r) => setTimeout(r, 100));
      if (!(await listening(port))) throw new Error(`nats-server did not listen on ${port}`);
    },
    async stop() {
      const p = proc;
      proc = undefined;
      if (!p || p.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        p.once('exit', () => resolve());
        p.kill('SIGTERM');
      });
    },
    async destroy() {
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await nats.start();
  process.once('exit', () => {
    proc?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  return nats;
}
