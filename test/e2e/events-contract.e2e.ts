import { ToolDeleted, ToolUpdated } from '@toolplane/contracts';
import { expectEventually } from '@toolplane/testing';
import { randomBytes } from 'node:crypto';
import { serviceClient, signedEventHeaders } from '../support/identity';

/**
 * Consumers read events by descriptor: what does not match the contract never reaches them (real
 * NATS). The events here are signed as their owner (the registry): what is not is dropped before
 * (event-signatures.e2e.ts).
 */
describe('MessagingClient.onEvents', () => {
  const prefix = `evt${randomBytes(4).toString('hex')}`;
  let a: Awaited<ReturnType<typeof serviceClient>>;

  beforeAll(async () => {
    a = await serviceClient('executor', prefix);
  });
  afterAll(() => a.close());

  const deleted = (orgId: string) => ({
    event_id: `e-${orgId}`,
    occurred_at: new Date().toISOString(),
    org_id: orgId,
    tool_id: 'tool-00000000-0000-4000-8000-0000000000e1',
    tool_name: 'x',
  });

  it('hands on valid payloads typed, drops malformed ones (counted, told to `invalid`), and stops on unsubscribe', async () => {
    const seen: string[] = [];
    const invalid: unknown[] = [];
    const sub = a.messaging.onEvents(
      [ToolUpdated, ToolDeleted],
      (e, p) => seen.push(`${e.subject.split('.').pop()}:${p.org_id}`),
      { invalid: (_e, raw) => invalid.push(raw) },
    );
    await a.nc.flush();
    const raw = (subject: string, body: string) => {
      const data = new TextEncoder().encode(body);
      a.nc.publish(`${prefix}.${subject}`, data, {
        headers: signedEventHeaders('registry', `${prefix}.${subject}`, data),
      });
    };
    raw(ToolDeleted.subject, JSON.stringify({ org_id: 'org-bad' })); // misses required fields
    raw(ToolDeleted.subject, 'not json');
    raw(ToolDeleted.subject, JSON.stringify(deleted('org-1')));
    const noTool = deleted('org-2');
    raw(ToolUpdated.subject, JSON.stringify(noTool)); // an update must carry the tool
    raw(ToolDeleted.subject, JSON.stringify(deleted('org-3')));
    await expectEventually(() => expect(seen).toEqual(['deleted:org-1', 'deleted:org-3']));
    await expectEventually(() => expect(a.messaging.droppedEvents.get(ToolDeleted.subject)).toBe(2));
    expect(a.messaging.droppedEvents.get(ToolUpdated.subject)).toBe(1);
    // Only JSON that does not match reaches `invalid` (bytes that are not JSON are just dropped).
    expect(invalid).toEqual(expect.arrayContaining([{ org_id: 'org-bad' }, noTool]));
    expect(invalid).toHaveLength(2);
    sub.unsubscribe();
    raw(ToolDeleted.subject, JSON.stringify(deleted('org-4')));
    const probe: string[] = [];
    const after = a.messaging.onEvents([ToolDeleted], (_e, p) => probe.push(p.org_id));
    await a.nc.flush();
    raw(ToolDeleted.subject, JSON.stringify(deleted('org-5')));
    await expectEventually(() => expect(probe).toEqual(['org-5']));
    expect(seen).toEqual(['deleted:org-1', 'deleted:org-3']);
    after.unsubscribe();
  });

  it('gives each event to one member of a queue group', async () => {
    const b = await serviceClient('executor', prefix);
    try {
      const got: string[] = [];
      const s1 = a.messaging.onEvents([ToolDeleted], (_e, p) => got.push(`a:${p.org_id}`), { queue: 'q' });
      const s2 = b.messaging.onEvents([ToolDeleted], (_e, p) => got.push(`b:${p.org_id}`), { queue: 'q' });
      await Promise.all([a.nc.flush(), b.nc.flush()]);
      for (let i = 0; i < 20; i++) {
        const data = new TextEncoder().encode(JSON.stringify(deleted(`org-${i}`)));
        a.nc.publish(`${prefix}.${ToolDeleted.subject}`, data, {
          headers: signedEventHeaders('registry', `${prefix}.${ToolDeleted.subject}`, data),
        });
      }
      await expectEventually(() => expect(got).toHaveLength(20));
      expect(new Set(got.map((g) => g.slice(2))).size).toBe(20);
      s1.unsubscribe();
      s2.unsubscribe();
    } finally {
      await b.close();
    }
  });
});
