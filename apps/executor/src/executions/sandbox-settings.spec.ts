import { mergePipRequirements, sandboxOverrides } from './run-request';

describe('sandbox config → runner request', () => {
  it('merges pip requirements: the config’s plus the tool’s, the tool’s version winning under pip’s name rules', () => {
    const merged = mergePipRequirements(
      [{ name: 'Requests', version: '2.0' }, { name: 'tool_only' }],
      [
        { name: 'requests', version: '1.0' },
        { name: 'cfg.only', version: '3' },
      ],
    );
    expect(merged).toEqual([
      { name: 'Requests', version: '2.0' },
      { name: 'cfg.only', version: '3' },
      { name: 'tool_only' },
    ]);
    expect(mergePipRequirements([], [])).toEqual([]);
  });

  it('maps memory and network; cloud-only settings and an empty config add nothing', () => {
    expect(sandboxOverrides(null)).toBeUndefined();
    expect(sandboxOverrides({ timeout_ms: 1000, default: true })).toBeUndefined();
    expect(sandboxOverrides({ cpu: 2, template: 'base', calls_per_sandbox: 2 })).toEqual({
      cpu: 2,
      template: 'base',
      calls_per_sandbox: 2,
    });
    expect(sandboxOverrides({ memory_mb: 128, network: 'egress' })).toEqual({ memory_mb: 128, network: true });
    expect(sandboxOverrides({ network: 'none' })).toEqual({ network: false });
  });
});
