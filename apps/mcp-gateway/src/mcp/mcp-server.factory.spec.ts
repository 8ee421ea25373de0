import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { restoreClient, SERVER_INFO } from './mcp-server.factory';

/**
 * A Server built for a later request of a session must know what the client said in initialize:
 * the SDK keeps it in private fields. This fails if an SDK upgrade moves them.
 */
describe('restoreClient', () => {
  it('gives a new Server the capabilities and client info of the session', () => {
    const sut = new Server(SERVER_INFO, { capabilities: { tools: {} } });
    expect(sut.getClientCapabilities()).toBeUndefined();
    restoreClient(sut, { elicitation: { form: {} } }, { name: 'client', version: '1.2.3' });
    expect(sut.getClientCapabilities()).toEqual({ elicitation: { form: {} } });
    expect(sut.getClientVersion()).toEqual({ name: 'client', version: '1.2.3' });
    // What the SDK checks before sending elicitation/create: no throw once restored.
    expect(() =>
      (sut as unknown as { assertCapabilityForMethod(m: string): void }).assertCapabilityForMethod(
        'elicitation/create',
      ),
    ).not.toThrow();
  });

  it('a session whose client cannot elicit is refused elicitation by the SDK', () => {
    const sut = new Server(SERVER_INFO, { capabilities: { tools: {} } });
    restoreClient(sut, {}, { name: 'client', version: '1' });
    expect(() =>
      (sut as unknown as { assertCapabilityForMethod(m: string): void }).assertCapabilityForMethod(
        'elicitation/create',
      ),
    ).toThrow(/elicitation/);
  });
});
