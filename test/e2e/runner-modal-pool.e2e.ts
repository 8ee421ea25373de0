import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { expectEventually } from '@toolplane/testing';
import { startModalFake, type ModalFake } from '../../tools/fakes/modal/modal-fake';
import { testDatabaseUrl, uniqueOrg } from '../support/context';
import { executeOnceBuilt } from '../support/executions';
import { RawClient } from '../support/nats-client';
import { startStack, type Stack } from '../support/stack';
import { pythonTool } from '../support/tools';

/**
 * runner-modal's warm pool through the public API, against the Modal fake: calls_per_sandbox,
 * the global sandbox bound shared fairly between orgs, idle reaping, a config change, the
 * readiness probe before the first call under a schedule latency, and TypeScript tools. Observed
 * through the fake's stats and the runner's /metrics, polled with deadlines.
 */
describe('runner-modal: the warm pool', () => {
  const prefix = `mdp${Math.random().toString(36).slice(2, 8)}`;
  const TOKEN = {
    id: `ak-${Math.random().toString(36).slice(2, 12)}`,
    secret: `as-${Math.random().toString(36).slice(2, 14)}`,
  };
  /** A host dir the sandboxes read: a tool blocks until the test writes `open` in it. */
  const gate = mkdtempSync(path.join(tmpdir(), 'tp-modal-gate-'));
  const MAX_TOTAL = 3;
  const MAX_PER_ORG = 2;
  let fake: ModalFake;
  let stack: Stack;
  let client: RawClient;

  const req = (subject: string, body: Record<string, unknown>) => client.call(subject, body, 120_000);
  const setToken = async (o: string) => {
    await req('toolplane.v1.secrets.set', {
      org_id: o,
      scope: 'sandbox',
      provider: 'modal',
      key: 'MODAL_TOKEN_ID',
      value: TOKEN.id,
    });
    await req('toolplane.v1.secrets.set', {
      org_id: o,
      scope: 'sandbox',
      provider: 'modal',
      key: 'MODAL_TOKEN_SECRET',
      value: TOKEN.secret,
    });
  };
  const newOrg = async (name: string) => {
    const o = uniqueOrg(name);
    await setToken(o);
    return o;
  };
  const register = (o: string, source_code: string, extra: Record<string, unknown> = {}) =>
    req('toolplane.v1.tools.upsert', { org_id: o, tool: { source_code, metadata_: { sandbox: 'modal' }, ...extra } });
  const execute = (o: string, name: string, extra: Record<string, unknown> = {}) =>
    client.req(
      'toolplane.v1.tools.execute',
      { org_id: o, tool_name: name, args: {}, ...extra },
      { timeoutMs: 180_000 },
    );
  /** Retries while the answer is ENVIRONMENT_BUILDING (retryable by contract: a sandbox is on its way). */
  const executeReady = (o: string, name: string, extra: Record<string, unknown> = {}) =>
    executeOnceBuilt(client, { org_id: o, tool_name: name, args: {}, ...extra });
  const until = (check: () => void | Promise<void>, ms = 120_000) =>
    expectEventually(check, { timeoutMs: ms, intervalMs: 50 });
  const sandboxesOf = (o: string) => fake.stats().sandboxes.filter((s) => s.tags['toolplane-org'] === o);
  const running = (o?: string) =>
    fake.stats().sandboxes.filter((s) => s.running && (o === undefined || s.tags['toolplane-org'] === o));
  /** Sandboxes of the org running a call now (the launcher's `run` exec started, not ended). */
  const busy = (o: string) =>
    running(o).filter((s) => s.execLog.some((e) => / run /.test(e.command) && e.endedAt === undefined));
  const metrics = async () =>
    (await fetch(`http://127.0.0.1:${stack.apps.get('runner-modal')!.healthPort}/metrics`)).text();
  const metric = async (name: string) =>
    Number((await metrics()).match(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)`, 'm'))?.[1] ?? 0);

  beforeAll(async () => {
    chmodSync(gate, 0o755); // the sandboxes' unprivileged uid reads it
    fake = await startModalFake({ readable: [gate], tokens: [TOKEN] });
    stack = await startStack({
      prefix,
      databaseUrl: testDatabaseUrl(),
      apps: ['schema', 'registry', 'credentials', 'executor', 'runner-modal'],
      env: { LOG_LEVEL: 'warn' },
      appEnv: {
        executor: { RUNNER_REPLY_MARGIN_MS: '20000' },
        'runner-modal': {
          MODAL_SERVER_URL: fake.serverUrl,
          MODAL_PYTHON: '/usr/bin/python3',
          MODAL_WARM_SANDBOXES: '0',
          MODAL_MAX_SANDBOXES: String(MAX_TOTAL),
          MODAL_MAX_SANDBOXES_PER_ORG: String(MAX_PER_ORG),
          MODAL_BUILD_WAIT_MS: '2000',
          MODAL_IDLE_TTL_MS: '8000',
          MODAL_REAP_INTERVAL_MS: '250',
        },
      },
    });
    client = await RawClient.connect(prefix);
  });
  afterAll(async () => {
    await client?.close();
    await stack?.stop();
    await fake?.close();
    rmSync(gate, { recursive: true, force: true });
  });
  afterEach(() => {
    fake.faults = {};
    fake.scheduleLatencyMs = 0;
  });

  it('runs up to calls_per_sandbox calls at once in one sandbox, and proves it clean before it takes more', async () => {
    const o = await newOrg('mlanes');
    await req('toolplane.v1.sandbox-configs.upsert', {
      org_id: o,
      provider: 'modal',
      config: { calls_per_sandbox: 2 },
    });
    await register(o, pythonTool('nap', 'import time\ntime.sleep(1.5)\nreturn "rested"'));
    expect(await executeReady(o, 'nap')).toMatchObject({ status: 'success', provider: 'modal', func_return: 'rested' });
    const both = await Promise.all([executeReady(o, 'nap'), executeReady(o, 'nap')]);
    expect(both.map((r) => [r.status, r.func_return])).toEqual([
      ['success', 'rested'],
      ['success', 'rested'],
    ]);
    // Two calls ran at once in one sandbox (by default, never: runner-modal.e2e.ts).
    expect(Math.max(...sandboxesOf(o).map((s) => s.maxConcurrentExecs))).toBeGreaterThanOrEqual(2);
    expect(await executeReady(o, 'nap')).toMatchObject({ status: 'success', func_return: 'rested' });
  });

  it('bounds sandboxes across orgs: one org takes at most its share, another still gets a place, a third is told PROVIDER_RATE_LIMITED', async () => {
    const [a, b, c] = [await newOrg('mbounda'), await newOrg('mboundb'), await newOrg('mboundc')];
    const waits = pythonTool(
      'waits',
      `import os, time\nfor _ in range(2400):\n    if os.path.exists(${JSON.stringify(path.join(gate, 'open'))}):\n        break\n    time.sleep(0.05)\nreturn "released"`,
    );
    for (const o of [a, b, c]) await register(o, waits);
    let most = 0;
    let mostOfA = 0;
    const sampler = setInterval(() => {
      most = Math.max(most, running().length);
      mostOfA = Math.max(mostOfA, running(a).length);
    }, 25);
    try {
      // Org a asks for three sandboxes at once: it gets its share (2), and org b the last place.
      const calls = [a, a, a, b].map((o) => executeReady(o, 'waits', { timeout_ms: 150_000 }));
      await until(() => expect([busy(a).length, busy(b).length]).toEqual([MAX_PER_ORG, 1]));
      // Every place is taken by a busy sandbox: org c waits, then is told to come back.
      const refused = await execute(c, 'waits', { timeout_ms: 150_000 });
      expect(refused.error).toMatchObject({ code: 'PROVIDER_RATE_LIMITED', retryable: true });
      expect(refused.error.message).toContain('MODAL_MAX_SANDBOXES');
      writeFileSync(path.join(gate, 'open'), '');
      const done = await Promise.all(calls);
      // Two of org a's three calls had its two sandboxes; the third (whichever lost the race) waited
      // for one of them, or was told to come back.
      const ofA = done
        .slice(0, 3)
        .map((r) =>
          r.status === 'success' && r.func_return === 'released' ? 'released' : (r.error?.code ?? r.status),
        );
      expect(ofA.filter((x) => x === 'released').length).toBeGreaterThanOrEqual(2);
      expect(ofA.filter((x) => x !== 'released')).toEqual(ofA.filter((x) => x === 'PROVIDER_RATE_LIMITED'));
      expect(done[3]).toMatchObject({ status: 'success', func_return: 'released' });
      // Now idle sandboxes of other orgs make room for org c.
      let late = await executeReady(c, 'waits');
      for (let i = 0; late.error?.code === 'PROVIDER_RATE_LIMITED' && i < 100; i++)
        late = await executeReady(c, 'waits');
      expect(late).toMatchObject({ status: 'success', provider: 'modal', func_return: 'released' });
    } finally {
      clearInterval(sampler);
    }
    expect(most).toBeLessThanOrEqual(MAX_TOTAL);
    expect(mostOfA).toBeLessThanOrEqual(MAX_PER_ORG);
    expect(await metric('toolplane_modal_bound_waits_total')).toBeGreaterThanOrEqual(1);
  });

  it('terminates a sandbox idle past MODAL_IDLE_TTL_MS', async () => {
    const o = await newOrg('mreap');
    await register(o, pythonTool('ping', 'return "pong"'));
    expect(await executeReady(o, 'ping')).toMatchObject({ status: 'success', provider: 'modal' });
    const used = sandboxesOf(o).map((s) => s.id);
    expect(used.length).toBeGreaterThanOrEqual(1);
    const reapsBefore = await metric('toolplane_modal_sandbox_reaps_total');
    await until(() => expect(running(o)).toEqual([]));
    expect(await metric('toolplane_modal_sandbox_reaps_total')).toBeGreaterThan(reapsBefore);
    expect(await metric('toolplane_modal_sandbox_kills_total{reason="idle"}')).toBeGreaterThanOrEqual(1);
  });

  it("a change of the org's modal sandbox config retires the old sandboxes: new calls run in new ones", async () => {
    const o = await newOrg('mcfg');
    await register(o, pythonTool('ping', 'return "pong"'));
    const first = await executeReady(o, 'ping');
    expect(first).toMatchObject({ status: 'success', provider: 'modal' });
    const old = sandboxesOf(o);
    expect(old.length).toBeGreaterThanOrEqual(1);
    await req('toolplane.v1.sandbox-configs.upsert', { org_id: o, provider: 'modal', config: { cpu: 0.5 } });
    const after = await executeReady(o, 'ping');
    expect(after).toMatchObject({ status: 'success', provider: 'modal', func_return: 'pong' });
    expect(after.sandbox_config_fingerprint).not.toEqual(first.sandbox_config_fingerprint);
    // The old sandboxes go; the call ran in a new one, made with the new config.
    await until(() => expect(running(o).filter((r) => old.some((s) => s.id === r.id))).toEqual([]));
    const fresh = sandboxesOf(o).filter((s) => !old.some((x) => x.id === s.id));
    expect(fresh.length).toBeGreaterThanOrEqual(1);
    expect(fresh.every((s) => s.milliCpu === 500 && s.tags['toolplane-key'] !== old[0]!.tags['toolplane-key'])).toBe(
      true,
    );
    for (const s of old)
      expect(
        fake
          .stats()
          .sandboxes.find((x) => x.id === s.id)!
          .execLog.filter((e) => / run /.test(e.command)),
      ).toHaveLength(s.execLog.filter((e) => / run /.test(e.command)).length);
  });

  it('never sends a call to a sandbox before its readiness probe answered, however late Modal schedules it', async () => {
    const o = await newOrg('msched');
    fake.scheduleLatencyMs = 3000;
    await register(o, pythonTool('ping', 'return "pong"'));
    expect(await executeReady(o, 'ping')).toMatchObject({ status: 'success', provider: 'modal', func_return: 'pong' });
    const served = sandboxesOf(o).filter((s) => s.execLog.some((e) => / run /.test(e.command)));
    expect(served.length).toBeGreaterThanOrEqual(1);
    for (const s of served) {
      const setup = s.execLog.find((e) => / setup /.test(e.command));
      const firstRun = s.execLog.find((e) => / run /.test(e.command))!;
      expect(setup?.endedAt).toBeDefined();
      expect(s.scheduledAt).toBeDefined();
      expect(firstRun.requestedAt).toBeGreaterThanOrEqual(setup!.endedAt!);
      expect(firstRun.requestedAt).toBeGreaterThanOrEqual(s.scheduledAt!);
    }
  });

  it('runs TypeScript tools (Node in the image)', async () => {
    const o = await newOrg('mts');
    await register(
      o,
      '/**\n * Add.\n * @param a first\n * @param b second\n */\nexport function add(a: number, b: number): number {\n  console.log("adding");\n  return a + b;\n}\n',
      { source_type: 'typescript' },
    );
    const r = await executeReady(o, 'add', { args: { a: 2, b: 40 } });
    expect(r).toMatchObject({ status: 'success', provider: 'modal', func_return: 42 });
    expect(r.stdout.join('')).toContain('adding');
    await register(o, '/**\n * Uses a package.\n */\nexport function dep(): string {\n  return "x";\n}\n', {
      source_type: 'typescript',
      npm_requirements: [{ name: 'left-pad', version: '1.3.0' }],
    });
    const refused = await executeReady(o, 'dep');
    expect(refused.error).toMatchObject({ code: 'UNSUPPORTED_TOOL' });
    expect(refused.error.message).toContain('npm requirements');
  });
});
