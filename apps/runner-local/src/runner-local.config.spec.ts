import { loadRunnerConfig } from './runner-local.config';

describe('loadRunnerConfig', () => {
  it('keeps network-enabled calls off and uses cgroups when delegated, by default', () => {
    const sut = loadRunnerConfig({});
    expect(sut.RUNNER_ALLOW_NETWORK).toBe(false);
    expect(sut.RUNNER_CGROUPS).toBe('auto');
    expect(sut.RUNNER_EGRESS_ALLOW).toEqual([]);
    expect(sut.RUNNER_MAX_CONCURRENCY_PER_ORG).toBeUndefined();
  });

  it('takes an egress allowlist of addresses and CIDRs, and names the variable of a bad entry', () => {
    expect(loadRunnerConfig({ RUNNER_EGRESS_ALLOW: '10.1.0.0/16, 192.0.2.2, fd00::/8' }).RUNNER_EGRESS_ALLOW).toEqual(['10.1.0.0/16', '192.0.2.2', 'fd00::/8']);
    expect(() => loadRunnerConfig({ RUNNER_EGRESS_ALLOW: '10.0.0.0/8,intranet' })).toThrow(/RUNNER_EGRESS_ALLOW\.1: each entry must be an IP address or CIDR/);
    expect(() => loadRunnerConfig({ RUNNER_CGROUPS: 'sometimes' })).toThrow(/RUNNER_CGROUPS/);
  });
});
