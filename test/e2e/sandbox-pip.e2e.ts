import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testDatabaseUrl, uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startStack, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';

/** Writes a pure-Python wheel `name-version-py3-none-any.whl` whose module exports VALUE. */
function writeWheel(dir: string, name: string, version: string, value: string): void {
  const script = `
import base64, hashlib, sys, zipfile
d, name, version, value = sys.argv[1:5]
files = {
    f"{name}/__init__.py": f"VALUE = {value!r}\\n",
    f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n",
    f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: toolplane-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
for path, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(text.encode())}")
record.append(f"{name}-{version}.dist-info/RECORD,,")
files[f"{name}-{version}.dist-info/RECORD"] = "\\n".join(record) + "\\n"
with zipfile.ZipFile(f"{d}/{name}-{version}-py3-none-any.whl", "w") as z:
    for path, text in files.items():
        z.writestr(path, text)
`;
  execFileSync('/usr/bin/python3', ['-I', '-c', script, dir, name, version, value]);
}

/**
 * pip requirements through the public API: a virtualenv per requirements hash, built once from a
 * local wheelhouse (no index), reused, and a typed error naming the package when pip fails.
 */
describe('sandbox pip requirements (local wheelhouse)', () => {
  const prefix = `pip${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('pip');
  const wheels = mkdtempSync(join(tmpdir(), 'tp-wheels-'));
  const workRoot = mkdtempSync(join(tmpdir(), 'tp-pip-runs-'));
  let stack: Stack;
  let client: RawClient;
  const register = async (name: string, body: string, pip_requirements?: Array<{ name: string; version?: string }>) => {
    const r = await client.req('toolplane.v1.tools.upsert', { org_id: org, tool: { source_code: pythonTool(name, body), ...(pip_requirements ? { pip_requirements } : {}) } });
    if (r.error) throw new Error(JSON.stringify(r.error));
  };
  const execute = (tool_name: string) => client.req('toolplane.v1.tools.execute', { org_id: org, tool_name, args: {} }, { timeoutMs: 60_000 });
  const venvs = () => readdirSync(join(workRoot, 'venvs')).filter((d) => d.startsWith('py-') && !d.endsWith('.lock'));
  const metric = async (name: string) => {
    const text = await (await fetch(`http://127.0.0.1:${stack.apps.get('runner-local')!.healthPort}/metrics`)).text();
    return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  };

  beforeAll(async () => {
    writeWheel(wheels, 'tpdemo', '1.0.0', 'from-wheel-1');
    writeWheel(wheels, 'tpdemo', '2.0.0', 'from-wheel-2');
    chmodSync(wheels, 0o755);
    chmodSync(workRoot, 0o755);
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      env: { LOG_LEVEL: 'warn' },
      appEnv: { 'runner-local': { RUNNER_PIP_FIND_LINKS: wheels, RUNNER_PIP_NO_INDEX: 'true', RUNNER_WORK_ROOT: workRoot, RUNNER_POOL_WARM: '1' } },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    rmSync(wheels, { recursive: true, force: true });
    rmSync(workRoot, { recursive: true, force: true });
  });

  it('builds the virtualenv once for two concurrent first calls and reuses it', async () => {
    await register('uses_demo', 'import tpdemo\nreturn tpdemo.VALUE', [{ name: 'tpdemo', version: '1.0.0' }]);
    await register('uses_demo_too', 'import tpdemo, sys\nreturn [tpdemo.VALUE, sys.prefix]', [{ name: 'TPDemo', version: '1.0.0' }]);
    const [a, b] = await Promise.all([execute('uses_demo'), execute('uses_demo_too')]);
    expect(a).toMatchObject({ status: 'success', func_return: 'from-wheel-1' });
    expect(b.status).toBe('success');
    expect(b.func_return[0]).toBe('from-wheel-1');
    expect(b.func_return[1]).toBe('/opt/venv'); // the venv is bound read-only at /opt/venv
    expect(venvs()).toHaveLength(1);
    expect(await metric('toolplane_runner_venv_builds_total')).toBe(1);

    const started = performance.now();
    expect((await execute('uses_demo')).func_return).toBe('from-wheel-1');
    expect(performance.now() - started).toBeLessThan(1000); // no pip on the hot path
    expect(await metric('toolplane_runner_venv_builds_total')).toBe(1);
  });

  it('keys environments by requirements: another version is another venv, no requirements sees none', async () => {
    await register('uses_demo_2', 'import tpdemo\nreturn tpdemo.VALUE', [{ name: 'tpdemo', version: '2.0.0' }]);
    expect((await execute('uses_demo_2')).func_return).toBe('from-wheel-2');
    expect(venvs()).toHaveLength(2);
    await register('no_demo', 'import tpdemo\nreturn tpdemo.VALUE');
    const r = await execute('no_demo');
    expect(r.status).toBe('error');
    expect(r.func_return).toBe("Error executing function no_demo: ModuleNotFoundError: No module named 'tpdemo'");
  });

  it('fails with DEPENDENCY_INSTALL_FAILED naming the package and quoting pip', async () => {
    await register('wants_missing', 'return 1', [{ name: 'not-in-wheelhouse', version: '9.9' }]);
    const r = await execute('wants_missing');
    expect(r.status).toBe('error');
    expect(r.error.code).toBe('DEPENDENCY_INSTALL_FAILED');
    expect(r.error.message).toContain('could not install not-in-wheelhouse==9.9');
    expect(r.error.message).toMatch(/No matching distribution found for not-in-wheelhouse==9\.9/);
    expect(venvs()).toHaveLength(2); // the failed build left nothing behind
    expect((await execute('uses_demo')).func_return).toBe('from-wheel-1');
  });
});
