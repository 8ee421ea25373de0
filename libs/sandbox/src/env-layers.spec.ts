import { layerEnv } from './env-layers';

describe('layerEnv', () => {
  it('applies sandbox config < credentials < agent secrets < call env < reserved ids', () => {
    const sut = layerEnv({
      sandboxConfig: { A: 'config', B: 'config', C: 'config', D: 'config', ONLY_CONFIG: '1' },
      credentials: { B: 'webhook', C: 'webhook', D: 'webhook' },
      agentSecrets: { C: 'secret', D: 'secret' },
      call: { D: 'call', TOOLPLANE_ORG_ID: 'spoofed', TOOLPLANE_TOOL_ID: 'spoofed' },
      reserved: { orgId: 'acme', toolId: 'tool-1', agentId: 'agent-9' },
    });
    expect(sut).toEqual({ A: 'config', B: 'webhook', C: 'secret', D: 'call', ONLY_CONFIG: '1', TOOLPLANE_ORG_ID: 'acme', TOOLPLANE_TOOL_ID: 'tool-1', TOOLPLANE_AGENT_ID: 'agent-9' });
  });

  it('drops other TOOLPLANE_* names and omits the agent id when there is none', () => {
    const sut = layerEnv({ agentSecrets: { TOOLPLANE_AGENT_ID: 'forged', TOOLPLANE_X: '1' }, reserved: { orgId: 'o', toolId: 't' } });
    expect(sut).toEqual({ TOOLPLANE_ORG_ID: 'o', TOOLPLANE_TOOL_ID: 't' });
  });
});
