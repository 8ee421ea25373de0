import { chmodSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { testDatabaseUrl, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { packProbingNpm, startSimpleIndex, writeProbingSdist } from '../support/packages';
import { CALL_APPS, startApp, startStack, type Stack, type StackOptions } from '../support/stack';
import { pythonTool } from '../support/tools';

const host = Object.values(networkInterfaces())
  .flat()
  .find((a) => a?.family === 'IPv4' && !a.internal)!.address;

/** Every entry of a built environment: owned by root, read-only (links are left as links). */
function lockedDown(dir: string): string[] {
  const problems: string[] = [];
  const visit = (p: string): void => {
    const st = lstatSync(p);
    if (st.uid !== 0 || st.gid !== 0) problems.push(`${p} owned by ${st.uid}:${st.gid}`);
    if (st.isSymbolicLink()) return;
    if (st.mode & 0o222) problems.push(`${p} writable (${(st.mode & 0o7777).toString(8)})`);
    if (st.isDirectory()) for (const e of readdirSync(p)) visit(join(p, e));
  };
  visit(dir);
  return problems;
}

/**
 * Package builds are tool code: a malicious local package's build script (a PEP 517 backend of an
 * sdist, an npm postinstall script) runs as confined as a tool — the seccomp filter, no
 * capabilities, no user namespaces, no network but the package index — and the link it plants
 * where the runner used to write its ready marker is never written through. Through the public API.
 */
describe('sandbox: package builds are sandboxed like tools', () => {
  const prefix = `bld${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('build');
  const scripted = uniqueOrg('build-scripts');
  const wheels = mkdtempSync(join(tmpdir(), 'tp-evil-wheels-'));
  const tarballs = mkdtempSync(join(tmpdir(), 'tp-evil-npm-'));
  const index = mkdtempSync(join(tmpdir(), 'tp-evil-index-'));
  const workRoot = mkdtempSync(join(tmpdir(), 'tp-build-runs-'));
  const victimDir = mkdtempSync(join(tmpdir(), 'tp-victim-'));
  const victim = join(victimDir, 'root-owned-file');
  let canary: Server;
  let canaryPort = 0;
  let knocks = 0;
  let stack: Stack;
  let client: RawClient;
  let opts: StackOptions;

  const req = (subject: string, body: Record<string, unknown>) => client.call(subject, body, 120_000);
  const execute = (o: string, name: string) =>
    req('toolplane.v1.tools.execute', { org_id: o, tool_name: name, args: {} });
  const python = (o: string, name: string, pkg: string) =>
    req('toolplane.v1.tools.upsert', {
      org_id: o,
      tool: {
        source_code: pythonTool(name, `import json, ${pkg}\nreturn json.loads(${pkg}.VALUE)`),
        pip_requirements: [{ name: pkg, version: '1.0' }],
      },
    });
  const restartRunner = async (env: Record<string, string>) => {
    await stack.stopApp('runner-local');
    stack.apps.set(
      'runner-local',
      await startApp('runner-local', {
        ...opts,
        appEnv: { 'runner-local': { ...opts.appEnv!['runner-local'], ...env } },
      }),
    );
  };
  const envDirs = (kind: 'venvs' | 'node_modules') =>
    readdirSync(join(workRoot, kind)).filter((d) => /^(py|npm)-[0-9a-f]+$/.test(d));
  const confined = { seccomp: '2', no_new_privs: '1', cap_eff: '0000000000000000' };

  beforeAll(async () => {
    canary = createServer((s) => {
      knocks++;
      s.destroy();
    });
    await new Promise<void>((r) => canary.listen(0, '0.0.0.0', r));
    canaryPort = (canary.address() as { port: number }).port;
    writeFileSync(victim, 'original\n', { mode: 0o644 });
    chmodSync(victimDir, 0o755);
    const targets = [`127.0.0.1 ${canaryPort}`, `${host} ${canaryPort}`];
    writeProbingSdist(wheels, 'tpevil', '1.0', targets, { '/opt/venv/.toolplane-ready': victim });
    writeProbingSdist(wheels, 'tpevil2', '1.0', [], {});
    packProbingNpm(tarballs, 'tp-evil-npm', '1.0.0', targets, { '/opt/npm/.toolplane-ready': victim });
    for (const d of [wheels, tarballs, workRoot]) chmodSync(d, 0o755);
    opts = {
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: CALL_APPS,
      env: { LOG_LEVEL: 'warn' },
      appEnv: {
        'runner-local': {
          RUNNER_WORK_ROOT: workRoot,
          RUNNER_POOL_WARM: '1',
          RUNNER_PIP_FIND_LINKS: wheels,
          RUNNER_PIP_NO_INDEX: 'true',
          RUNNER_NPM_LOCAL_DIRS: tarballs,
          RUNNER_NPM_OFFLINE: 'true',
        },
      },
    };
    stack = await startStack(opts);
    client = await RawClient.connect(prefix);
    await req('toolplane.v1.sandbox-configs.upsert', {
      org_id: scripted,
      provider: 'local',
      config: { build_scripts: true },
    });
    for (const o of [org, scripted]) {
      await python(o, 'uses_evil', 'tpevil');
      await python(o, 'uses_evil2', 'tpevil2');
      await req('toolplane.v1.tools.upsert', {
        org_id: o,
        tool: {
          source_type: 'typescript',
          source_code:
            "import { result } from 'tp-evil-npm';\n\n/** What the package's build script saw. */\nexport function evil_npm(): unknown {\n  return result();\n}\n",
          npm_requirements: [{ name: 'tp-evil-npm', version: '1.0.0' }],
        },
      });
    }
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    await new Promise((r) => canary?.close(r));
    for (const d of [wheels, tarballs, index, workRoot, victimDir]) rmSync(d, { recursive: true, force: true });
  });

  it('an sdist build runs confined, offline; the link it plants is never written through; the venv ends root-owned and read-only', async () => {
    const r = await execute(org, 'uses_evil');
    expect(r.status).toBe('success');
    expect(r.func_return).toEqual({
      ...confined,
      unshare_user: [-1, 1], // EPERM: no user namespace, whatever the flags
      [`127.0.0.1 ${canaryPort}`]: 'ConnectionRefusedError', // its own empty loopback
      [`${host} ${canaryPort}`]: 'OSError', // ENETUNREACH: no route anywhere
      dns: 'gaierror',
      'plant /opt/venv/.toolplane-ready': 'planted',
    });
    expect(readFileSync(victim, 'utf8')).toBe('original\n');
    expect(knocks).toBe(0);
    // Its venv (other tools' venvs are built too: each upsert starts its tool's build).
    const venv = (await req('toolplane.v1.tools.environment', { org_id: org, tool_name: 'uses_evil' })).environment
      .requirements_hash;
    expect(envDirs('venvs')).toContain(venv);
    expect(lstatSync(join(workRoot, 'venvs', `${venv}.ready`)).isFile()).toBe(true); // the marker sits beside the venv, not inside
    expect(lockedDown(join(workRoot, 'venvs', venv!))).toEqual([]);
  });

  it('npm install scripts do not run unless the org opts in (build_scripts); when they do, they are confined and cannot write through a link', async () => {
    const off = await execute(org, 'evil_npm');
    expect(off).toMatchObject({ status: 'success', func_return: 'the build script did not run' });
    const on = await execute(scripted, 'evil_npm');
    expect(on.status).toBe('success');
    expect(on.func_return).toMatchObject({
      ...confined,
      [`127.0.0.1 ${canaryPort}`]: 'ECONNREFUSED',
      [`${host} ${canaryPort}`]: 'ENETUNREACH',
      'plant /opt/npm/.toolplane-ready': 'planted',
    });
    expect(on.func_return.dns).toMatch(/^(ENOTFOUND|EAI_AGAIN)$/);
    expect(readFileSync(victim, 'utf8')).toBe('original\n');
    expect(knocks).toBe(0);
    const trees = envDirs('node_modules');
    expect(trees).toHaveLength(2); // with and without scripts: two trees
    for (const t of trees) expect(lockedDown(join(workRoot, 'node_modules', t))).toEqual([]);
  });

  it('RUNNER_PIP_ONLY_BINARY refuses sdists, unless the org opts in to build scripts', async () => {
    await restartRunner({ RUNNER_PIP_ONLY_BINARY: 'true' });
    const refused = await execute(org, 'uses_evil2');
    expect(refused).toMatchObject({ status: 'error', error: { code: 'DEPENDENCY_INSTALL_FAILED' } });
    expect(refused.error.message).toContain('could not install tpevil2');
    expect(await execute(scripted, 'uses_evil2')).toMatchObject({ status: 'success', func_return: confined });
  });

  it('a build that needs the package index reaches the index and nothing else; an index on an internal address must be allowlisted', async () => {
    const idx = await startSimpleIndex(index, host);
    const port = new URL(idx.url).port;
    try {
      writeProbingSdist(
        index,
        'tpindexed',
        '1.0',
        [`${host} ${port}`, `10.0.2.2 ${port}`, '10.0.2.3 53', `127.0.0.1 ${canaryPort}`, '192.0.2.77 80'],
        {},
      );
      await python(org, 'uses_indexed', 'tpindexed');
      const pipFromIndex = {
        PIP_INDEX_URL: idx.url,
        RUNNER_PIP_NO_INDEX: 'false',
        RUNNER_PIP_FIND_LINKS: '',
        RUNNER_PIP_ONLY_BINARY: 'false',
      };
      await restartRunner(pipFromIndex);
      const refused = await execute(org, 'uses_indexed');
      expect(refused).toMatchObject({ status: 'error', error: { code: 'DEPENDENCY_INSTALL_FAILED' } });
      expect(refused.error.message).toMatch(/RUNNER_EGRESS_ALLOW/);
      expect(idx.requests).toEqual([]);

      await restartRunner({ ...pipFromIndex, RUNNER_EGRESS_ALLOW: `${host}/32` });
      const r = await execute(org, 'uses_indexed');
      expect(r.error).toBeUndefined();
      expect(r.func_return).toEqual({
        ...confined,
        unshare_user: [-1, 1],
        [`${host} ${port}`]: 'connected', // the index
        [`10.0.2.2 ${port}`]: 'PermissionError',
        '10.0.2.3 53': 'PermissionError', // no DNS: the index's name is pinned
        [`127.0.0.1 ${canaryPort}`]: 'ConnectionRefusedError',
        '192.0.2.77 80': 'PermissionError',
        dns: 'gaierror',
      });
      expect(idx.requests).toContain('/simple/tpindexed/');
      expect(knocks).toBe(0);
    } finally {
      await new Promise((r) => idx.server.close(r));
    }
  });
});
