import { expectEventually } from '@toolplane/testing';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { uniqueOrg } from '../support/context';
import { RawClient } from '../support/nats-client';
import { metricOf, type Stack, startCallStack } from '../support/stack';
import { pythonTool } from '../support/tools';
import { localWheelhouse } from '../support/wheels';

/**
 * Limits hold per call, not per process, and one org cannot starve another — through the public
 * API: eight processes of one call share its memory_mb (its cgroup), an org flooding a runner
 * that runs two calls at once does not make another org's call wait for the flood, and
 * virtualenvs are evicted least-recently-used under a byte budget.
 */
describe('sandbox: limits per call, fairness between orgs, a disk budget', () => {
  const prefix = `lim${Math.random().toString(36).slice(2, 8)}`;
  const org = uniqueOrg('limits');
  const flood = uniqueOrg('flood');
  const other = uniqueOrg('other');
  const KB = 1024;
  // 0.4 MB of random bytes each: a venv with one of them is ~0.45 MB, two fit in 1 MB, three do not.
  const house = localWheelhouse([
    ['tplru_a', '1.0', 'lru-a', 400 * KB],
    ['tplru_b', '1.0', 'lru-b', 400 * KB],
    ['tplru_c', '1.0', 'lru-c', 400 * KB],
  ]);
  let stack: Stack;
  let client: RawClient;

  const req = (subject: string, body: Record<string, unknown>) => client.call(subject, body, 60_000);
  const register = (o: string, name: string, body: string, extra: Record<string, unknown> = {}) =>
    req('toolplane.v1.tools.upsert', { org_id: o, tool: { source_code: pythonTool(name, body), ...extra } });
  const execute = (o: string, name: string) =>
    req('toolplane.v1.tools.execute', { org_id: o, tool_name: name, args: {} });
  const metric = (name: string) => metricOf(stack.apps.get('runner-local')!, name);
  const until = (check: () => Promise<void>) => expectEventually(check, { timeoutMs: 30_000, intervalMs: 50 });

  beforeAll(async () => {
    stack = await startCallStack(prefix, {
      'runner-local': {
        ...house.runnerEnv,
        RUNNER_POOL_WARM: '2',
        RUNNER_MAX_CONCURRENCY: '2',
        RUNNER_POOL_IDLE_TTL_MS: '1000',
        RUNNER_ENV_STORE_MAX_MB: '1',
        RUNNER_ENV_STORE_MIN_IDLE_MS: '0',
      },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    house.remove();
  });

  it('limits the memory of a call, not of each process: 8 processes cannot together hold more than memory_mb', async () => {
    expect(
      (await (await fetch(`http://127.0.0.1:${stack.apps.get('runner-local')!.healthPort}/metrics`)).text()).match(
        /toolplane_runner_cgroups_info\{mode="(v1|v2)"\} 1/,
      ),
    ).not.toBeNull();
    await req('toolplane.v1.sandbox-configs.upsert', { org_id: org, provider: 'local', config: { memory_mb: 128 } });
    await register(
      org,
      'grab',
      `import os, time
children = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        block = b"x" * (48 * 1024 * 1024)  # written: resident, 48 MiB under a 128 MiB limit per process
        time.sleep(1)
        os._exit(0)
    children.append(pid)
statuses = [os.waitpid(pid, 0)[1] for pid in children]
return {"exited": sum(1 for s in statuses if os.WIFEXITED(s) and os.WEXITSTATUS(s) == 0), "killed": sum(1 for s in statuses if os.WIFSIGNALED(s) and os.WTERMSIG(s) == 9)}`,
    );
    const r = await execute(org, 'grab');
    expect(r.status).toBe('success');
    // 8 x 48 MiB = 384 MiB: with per-process limits every child gets its 48 MiB; per call, the kernel kills some.
    expect(r.func_return.killed).toBeGreaterThan(0);
    expect(r.func_return.exited).toBeLessThan(8);
    expect(r.func_return.exited + r.func_return.killed).toBe(8);
  });

  it("an org flooding the runner does not make another org's call wait for the flood", async () => {
    await register(flood, 'nap', 'import time\ntime.sleep(0.3)\nreturn "flood"');
    await register(other, 'quick', 'return "other"');
    expect((await execute(other, 'quick')).func_return).toBe('other');
    const finished: string[] = [];
    const floods = Array.from({ length: 12 }, () => execute(flood, 'nap').then((r) => finished.push(r.func_return)));
    // The flood fills both places and queues the rest before the other org's call arrives.
    await until(async () => expect(await metric('toolplane_runner_queued')).toBeGreaterThanOrEqual(8));
    const quick = execute(other, 'quick').then((r) => finished.push(r.func_return));
    await Promise.all([...floods, quick]);
    expect(finished).toHaveLength(13);
    // FIFO would finish it last (13th); it takes the first place that frees up instead.
    expect(finished.indexOf('other')).toBeLessThan(4);
  });

  it('evicts the least recently used virtualenv when the environments outgrow RUNNER_ENV_STORE_MAX_MB, and rebuilds it when needed again', async () => {
    // Each tool is registered just before its first call: an upsert starts building its environment.
    const use = (n: string) =>
      register(org, `use_${n}`, `import tplru_${n}\nreturn tplru_${n}.VALUE`, {
        pip_requirements: [{ name: `tplru_${n}`, version: '1.0' }],
      });
    const venvs = () => readdirSync(join(house.workRoot, 'venvs')).filter((d) => /^py-[0-9a-f]+$/.test(d));
    await use('a');
    expect(await execute(org, 'use_a')).toMatchObject({ status: 'success', func_return: 'lru-a' });
    const [a] = venvs();
    await use('b');
    expect(await execute(org, 'use_b')).toMatchObject({ status: 'success', func_return: 'lru-b' });
    const b = venvs().find((d) => d !== a);
    // Their sandboxes idle out (an environment in use is never evicted), then a third one is built.
    await until(async () => expect(await metric('toolplane_runner_pool_slots')).toBeLessThanOrEqual(2));
    const builds = await metric('toolplane_runner_venv_builds_total');
    await use('c');
    expect(await execute(org, 'use_c')).toMatchObject({ status: 'success', func_return: 'lru-c' });
    await until(async () =>
      expect(await metric('toolplane_runner_environments_evicted_total')).toBeGreaterThanOrEqual(1),
    );
    expect(await metric('toolplane_runner_environments_evicted_total')).toBe(1);
    expect(venvs()).not.toContain(a);
    expect(venvs()).toContain(b);
    expect(venvs()).toHaveLength(2);
    expect(await execute(org, 'use_a')).toMatchObject({ status: 'success', func_return: 'lru-a' });
    expect(await metric('toolplane_runner_venv_builds_total')).toBe(builds + 2);
  });
});
