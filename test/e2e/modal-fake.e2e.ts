import { ModalClient, type Sandbox } from 'modal';
import { startModalFake, type ModalFake } from '../../tools/fakes/modal/modal-fake';

/**
 * The Modal fake (tools/fakes/modal) driven by the unmodified `modal` SDK: a sandbox is created from
 * an image, found by its tags, runs commands (stdout, stderr, exit code, env, stdin, timeouts) each
 * inside bubblewrap, reads and writes files through the SDK's filesystem API, and is terminated;
 * credentials are checked and each fault comes back the way Modal's would.
 */
describe('Modal fake: the real SDK against it', () => {
  let fake: ModalFake;
  const TOKEN = { id: 'ak-fake', secret: 'as-fake' };
  const clientOf = (token = TOKEN) =>
    new ModalClient({ tokenId: token.id, tokenSecret: token.secret, environment: 'main' });
  let modal: ModalClient;
  let sandbox: Sandbox;
  /** Every sandbox handle opened: detached at the end (the SDK keeps a command-router channel per sandbox). */
  const opened: Sandbox[] = [];
  const track = (s: Sandbox) => (opened.push(s), s);

  beforeAll(async () => {
    fake = await startModalFake({ tokens: [TOKEN, { id: 'ak-other', secret: 'as-other' }] });
    process.env.MODAL_SERVER_URL = fake.serverUrl;
    modal = clientOf();
    const app = await modal.apps.fromName('toolplane-fake-test', { createIfMissing: true });
    const image = modal.images.fromRegistry('python:3.12-slim');
    sandbox = track(
      await modal.sandboxes.create(app, image, {
        tags: { purpose: 'fake-test' },
        env: { SANDBOX_LEVEL: 'from-create' },
        blockNetwork: true,
        cpu: 0.5,
        memoryMiB: 256,
      }),
    );
  });

  afterAll(async () => {
    for (const s of opened) s.detach();
    await fake?.close();
    delete process.env.MODAL_SERVER_URL;
  });

  it('runs a command: stdout, stderr and the exit code', async () => {
    const p = await sandbox.exec([
      '/usr/bin/python3',
      '-c',
      'import sys; print("hello from modal"); print("oops", file=sys.stderr); sys.exit(3)',
    ]);
    expect(await p.wait()).toBe(3);
    expect(await p.stdout.readText()).toBe('hello from modal\n');
    expect(await p.stderr.readText()).toBe('oops\n');
  });

  it('gives a command the sandbox env and its own env, and its stdin', async () => {
    const p = await sandbox.exec(
      [
        '/usr/bin/python3',
        '-c',
        'import os, sys; print(os.environ["SANDBOX_LEVEL"], os.environ["CALL_LEVEL"], sys.stdin.read().upper())',
      ],
      { env: { CALL_LEVEL: 'from-exec' } },
    );
    await p.stdin.writeText('piped in');
    await p.stdin.close();
    expect(await p.wait()).toBe(0);
    expect(await p.stdout.readText()).toBe('from-create from-exec PIPED IN\n');
  });

  it('isolates commands: no network, an unprivileged uid, the host invisible', async () => {
    const p = await sandbox.exec([
      '/usr/bin/python3',
      '-c',
      'import os, socket\nprint(os.getuid() != 0, os.path.exists("/work"), os.path.exists("/etc/shadow"))\ntry:\n  socket.create_connection(("1.1.1.1", 53), timeout=1); print("net")\nexcept OSError: print("no-net")',
    ]);
    expect(await p.wait()).toBe(0);
    expect((await p.stdout.readText()).split(/\s+/).filter(Boolean)).toEqual(['True', 'False', 'False', 'no-net']);
  });

  it('writes and reads files through the filesystem API, seen by commands', async () => {
    await sandbox.filesystem.writeText('payload ✓', '/tmp/in/data.txt');
    const p = await sandbox.exec([
      '/bin/sh',
      '-c',
      'cat /tmp/in/data.txt > /tmp/out.txt; echo " and back" >> /tmp/out.txt',
    ]);
    expect(await p.wait()).toBe(0);
    expect(await sandbox.filesystem.readText('/tmp/out.txt')).toBe('payload ✓ and back\n');
    await expect(sandbox.filesystem.readText('/tmp/missing.txt')).rejects.toThrow(/No such file/);
  });

  it('resumes dropped stdio streams from their offset, as the SDK expects of Modal', async () => {
    const drops = fake.stats().streamDrops;
    fake.faults = { dropStreams: true };
    try {
      const p = await sandbox.exec([
        '/usr/bin/python3',
        '-c',
        'import sys, time\nfor i in range(5):\n    print(f"line {i}", flush=True); time.sleep(0.05)',
      ]);
      expect(await p.wait()).toBe(0);
      expect(await p.stdout.readText()).toBe('line 0\nline 1\nline 2\nline 3\nline 4\n');
      expect(fake.stats().streamDrops).toBeGreaterThan(drops);
    } finally {
      fake.faults = {};
    }
  });

  it('kills a command past its timeout', async () => {
    const p = await sandbox.exec(['/bin/sleep', '30'], { timeoutMs: 1000 });
    expect(await p.wait()).toBe(137);
  });

  it('lists sandboxes by tag for their own token only, and terminates them', async () => {
    const mine = [];
    for await (const s of modal.sandboxes.list({ tags: { purpose: 'fake-test' } })) mine.push(s.sandboxId);
    expect(mine).toEqual([sandbox.sandboxId]);
    const theirs = [];
    for await (const s of clientOf({ id: 'ak-other', secret: 'as-other' }).sandboxes.list({
      tags: { purpose: 'fake-test' },
    }))
      theirs.push(s.sandboxId);
    expect(theirs).toEqual([]);
    const stats = fake.stats().sandboxes.find((s) => s.id === sandbox.sandboxId)!;
    expect(stats).toMatchObject({ networkBlocked: true, milliCpu: 500, memoryMb: 256 });

    const app = await modal.apps.fromName('toolplane-fake-test');
    const doomed = track(
      await modal.sandboxes.create(app, modal.images.fromRegistry('python:3.12-slim'), { tags: { purpose: 'doomed' } }),
    );
    await doomed.terminate();
    expect(await doomed.wait()).toBe(137);
    const left = [];
    for await (const s of modal.sandboxes.list({ tags: { purpose: 'doomed' } })) left.push(s.sandboxId);
    expect(left).toEqual([]);
    await expect(doomed.exec(['/bin/true'])).rejects.toThrow(/has finished/);
  });

  it('builds an image once: its RUN lines run at build time, found again by definition', async () => {
    const app = await modal.apps.fromName('toolplane-fake-test');
    const before = fake.stats().imageBuilds;
    const image = () =>
      modal.images
        .fromRegistry('python:3.12-slim')
        .dockerfileCommands([`RUN printf '#!/bin/sh\\necho baked' > /opt/baked && chmod 755 /opt/baked`]);
    const built = await image().build(app);
    const again = await image().build(app);
    expect(again.imageId).toBe(built.imageId);
    expect(fake.stats().imageBuilds).toBe(before + 1);
    const sb = track(await modal.sandboxes.create(app, built));
    const p = await sb.exec(['/opt/baked']);
    expect(await p.wait()).toBe(0);
    expect(await p.stdout.readText()).toBe('baked\n');
    await sb.terminate();
  });

  it('answers faults the way Modal does: bad credentials, exhausted quota, a sandbox gone mid-exec', async () => {
    const app = await modal.apps.fromName('toolplane-fake-test');
    const image = modal.images.fromRegistry('python:3.12-slim');
    await expect(clientOf({ id: 'ak-bad', secret: 'nope' }).apps.fromName('toolplane-fake-test')).rejects.toThrow(
      /UNAUTHENTICATED|Invalid token/,
    );

    fake.faults = { resourceExhausted: true };
    await expect(modal.sandboxes.create(app, image)).rejects.toThrow(/RESOURCE_EXHAUSTED|quota/);
    fake.faults = {};

    const sb = track(await modal.sandboxes.create(app, image));
    fake.faults = { terminateMidExecMs: 300 };
    const p = await sb.exec(['/bin/sleep', '30']);
    fake.faults = {};
    expect(await p.wait()).toBe(137);
    expect(await sb.wait()).toBe(137);
  });
});
