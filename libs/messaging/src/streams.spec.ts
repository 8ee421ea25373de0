import type { NatsConnection } from '@nats-io/transport-node';
import { ensureEventsStream, ensureStream } from './streams';

/** The JetStream manager's stream API, faked: which streams exist, and what was added. */
const existing = new Set<string>();
const added: Array<Record<string, unknown>> = [];
jest.mock('@nats-io/jetstream', () => ({
  ...jest.requireActual('@nats-io/jetstream'),
  jetstreamManager: async () => ({
    streams: {
      info: async (name: string) => {
        if (!existing.has(name)) throw new Error('stream not found');
        return { config: { name } };
      },
      add: async (config: { name: string }) => {
        added.push(config);
        existing.add(config.name);
        return { config };
      },
    },
  }),
}));

const nc = {} as NatsConnection;

describe('ensureStream / ensureEventsStream', () => {
  beforeEach(() => {
    existing.clear();
    added.length = 0;
  });

  it('creates the events stream on the replica count it is given (a three-node cluster: 3)', async () => {
    const sut = await ensureEventsStream(nc, 'acme', 3);
    expect(sut).toBe('acme_TOOLPLANE_EVENTS');
    expect(added).toEqual([expect.objectContaining({ name: 'acme_TOOLPLANE_EVENTS', num_replicas: 3 })]);
  });

  it('creates it on one server by default (a single nats-server)', async () => {
    await ensureEventsStream(nc, '');
    expect(added).toEqual([expect.objectContaining({ name: 'TOOLPLANE_EVENTS', num_replicas: 1 })]);
  });

  it('leaves an existing stream as it is, its replica count included', async () => {
    existing.add('TOOLPLANE_EVENTS');
    await ensureEventsStream(nc, '', 3);
    await ensureStream(nc, { name: 'TOOLPLANE_EVENTS', num_replicas: 5 });
    expect(added).toEqual([]);
  });
});
