import type { McpStreamEvent } from '@toolplane/contracts';
import { parseEventId, RequestEventStore } from './request-event-store';
import type { StreamEventsRepository } from './stream-events.repository';

const STREAM = '0b6c1f7e-3d2a-4c5b-9e8f-1a2b3c4d5e6f';

describe('RequestEventStore', () => {
  let appended: Array<{ subject: string; event: McpStreamEvent }>;
  let sut: RequestEventStore;

  beforeEach(() => {
    appended = [];
    const repo = {
      append: (subject: string, event: McpStreamEvent) => appended.push({ subject, event }),
    } as unknown as StreamEventsRepository;
    sut = new RequestEventStore(repo, 'digest', [7], 60_000);
  });
  afterEach(() => sut.dispose());

  it('numbers the events of a POST stream, stores them under the session and stream, and settles when the request is answered', async () => {
    let answered = false;
    void sut.answered.then(() => (answered = true));
    const ids = [
      await sut.storeEvent(STREAM, {} as never),
      await sut.storeEvent(STREAM, {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: 1, progress: 1 },
      }),
      await sut.storeEvent(STREAM, { jsonrpc: '2.0', id: 7, result: {} }),
    ];
    await Promise.resolve();
    expect(ids).toEqual([`${STREAM}_1`, `${STREAM}_2`, `${STREAM}_3`]);
    expect(appended.map((a) => a.subject)).toEqual(Array(3).fill(`toolplane.internal.v1.mcp-streams.digest.${STREAM}`));
    expect(appended[0]!.event).toEqual({ n: 1, requests: [7] }); // the priming event: no message
    expect(appended[2]!.event.message).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
    expect(answered).toBe(true);
  });

  it('does not store the events of a stream that is not a POST’s', async () => {
    expect(await sut.storeEvent('_GET_stream', { jsonrpc: '2.0', method: 'notifications/tools/list_changed' })).toBe(
      '_GET_stream_1',
    );
    expect(appended).toEqual([]);
  });

  it('reads back only the ids it makes', () => {
    expect(parseEventId(`${STREAM}_12`)).toEqual({ streamId: STREAM, n: 12 });
    for (const bad of ['_GET_stream_1', `${STREAM}_`, `${STREAM}_x`, 'nope', `${STREAM}_1234567890`])
      expect(parseEventId(bad)).toBeUndefined();
  });
});
