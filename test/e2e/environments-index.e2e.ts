import { expectEventually } from '@toolplane/testing';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostAddress, packNpm, startConnectProxy, startHttpsIndex, testCertificates } from '../support/build-fixtures';
import { uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { startCallStack, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';
import { writeWheel } from '../support/wheels';

/** A name nothing resolves: only the proxy knows where the index is. */
const INDEX_HOST = 'tp-index.test';

/**
 * Package-index settings of builds come from the runner's config: an extra CA (RUNNER_BUILD_CA_FILE)
 * and a proxy (RUNNER_BUILD_PROXY), for pip and npm alike. The index here is served over HTTPS with
 * a certificate of a test CA, under a name only the proxy resolves: a build can only succeed if it
 * went through the proxy (its network reaches nothing else; no DNS) and trusted that CA.
 */
describe('environments: builds reach their index through the configured proxy, trusting the configured CA', () => {
  const prefix = `envi${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('envidx');
  const host = hostAddress();
  const files = mkdtempSync(join(tmpdir(), 'tp-https-index-'));
  const workRoot = mkdtempSync(join(tmpdir(), 'tp-index-runs-'));
  const certs = testCertificates(INDEX_HOST);
  let index: Awaited<ReturnType<typeof startHttpsIndex>>;
  let proxy: Awaited<ReturnType<typeof startConnectProxy>>;
  let stack: Stack;
  let client: RawClient;

  const req = (subject: string, body: Record<string, unknown>) => client.call(subject, body, 60_000);
  const ready = (name: string) =>
    expectEventually(
      async () => {
        const { environment } = await req('toolplane.v1.tools.environment', { org_id: org, tool_name: name });
        expect(['ready', 'failed']).toContain(environment.status);
        return environment;
      },
      { timeoutMs: 240_000, intervalMs: 100 },
    );

  beforeAll(async () => {
    writeWheel(files, 'tpproxied', '1.0', 'through-the-proxy');
    packNpm(files, 'tp-proxied-npm', '1.0.0', { 'index.js': "exports.where = () => 'npm through the proxy';\n" });
    index = await startHttpsIndex(files, INDEX_HOST, certs);
    proxy = await startConnectProxy(host, { [INDEX_HOST]: index.port });
    chmodSync(workRoot, 0o755);
    stack = await startCallStack(prefix, {
      'runner-local': {
        RUNNER_WORK_ROOT: workRoot,
        RUNNER_POOL_WARM: '1',
        PIP_INDEX_URL: `https://${INDEX_HOST}:${index.port}/simple/`,
        RUNNER_NPM_REGISTRY: `https://${INDEX_HOST}:${index.port}/npm/`,
        RUNNER_BUILD_PROXY: proxy.url,
        RUNNER_BUILD_CA_FILE: certs.caFile,
        // The proxy is on this host's (private) address: allowlisted like any internal index.
        RUNNER_EGRESS_ALLOW: `${host}/32`,
      },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    await proxy?.close();
    await new Promise((r) => index?.server.close(r));
    for (const d of [files, workRoot]) rmSync(d, { recursive: true, force: true });
    certs.remove();
  });

  it('pip: the virtualenv is built from the HTTPS index through the proxy', async () => {
    await req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: {
        source_code: pythonTool('proxied_pip', 'import tpproxied\nreturn tpproxied.VALUE'),
        pip_requirements: [{ name: 'tpproxied', version: '1.0' }],
      },
    });
    const env = await ready('proxied_pip');
    expect(env.error).toBeUndefined();
    expect(env.status).toBe('ready');
    expect(proxy.connects).toContain(`${INDEX_HOST}:${index.port}`);
    expect(index.requests).toContain('/simple/tpproxied/');
    expect(index.requests).toContain('/files/tpproxied-1.0-py3-none-any.whl');
    expect(await req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'proxied_pip', args: {} })).toMatchObject({
      status: 'success',
      func_return: 'through-the-proxy',
    });
  });

  it('npm: the node_modules tree is built from the HTTPS registry through the proxy', async () => {
    const before = proxy.connects.length;
    await req('toolplane.v1.tools.upsert', {
      org_id: org,
      tool: {
        source_type: 'typescript',
        source_code:
          "import { where } from 'tp-proxied-npm';\n\n/** Where the package came from. */\nexport function proxied_npm(): string {\n  return where();\n}\n",
        npm_requirements: [{ name: 'tp-proxied-npm', version: '1.0.0' }],
      },
    });
    const env = await ready('proxied_npm');
    expect(env.error).toBeUndefined();
    expect(env.status).toBe('ready');
    expect(proxy.connects.slice(before)).toContain(`${INDEX_HOST}:${index.port}`);
    expect(index.requests).toContain('/npm/tp-proxied-npm');
    expect(index.requests).toContain('/files/tp-proxied-npm-1.0.0.tgz');
    expect(await req('toolplane.v1.tools.execute', { org_id: org, tool_name: 'proxied_npm', args: {} })).toMatchObject({
      status: 'success',
      func_return: 'npm through the proxy',
    });
  });
});
