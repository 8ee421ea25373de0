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
    expect(loadRunnerConfig({ RUNNER_EGRESS_ALLOW: '10.1.0.0/16, 192.0.2.2, fd00::/8' }).RUNNER_EGRESS_ALLOW).toEqual([
      '10.1.0.0/16',
      '192.0.2.2',
      'fd00::/8',
    ]);
    expect(() => loadRunnerConfig({ RUNNER_EGRESS_ALLOW: '10.0.0.0/8,intranet' })).toThrow(
      /RUNNER_EGRESS_ALLOW\.1: each entry must be an IP address or CIDR/,
    );
    expect(() => loadRunnerConfig({ RUNNER_CGROUPS: 'sometimes' })).toThrow(/RUNNER_CGROUPS/);
  });

  it('waits 20 s for a build by default, and takes a build proxy URL and CA file', () => {
    const sut = loadRunnerConfig({
      RUNNER_BUILD_PROXY: 'http://proxy.corp:3128',
      RUNNER_BUILD_CA_FILE: '/etc/corp-ca.pem',
    });
    expect(sut.RUNNER_BUILD_WAIT_MS).toBe(20_000);
    expect(sut.RUNNER_BUILD_PROXY).toBe('http://proxy.corp:3128');
    expect(sut.RUNNER_BUILD_CA_FILE).toBe('/etc/corp-ca.pem');
    expect(() => loadRunnerConfig({ RUNNER_BUILD_PROXY: 'proxy.corp:3128' })).toThrow(/RUNNER_BUILD_PROXY/);
    expect(() => loadRunnerConfig({ RUNNER_BUILD_CA_FILE: 'ca.pem' })).toThrow(/RUNNER_BUILD_CA_FILE/);
  });
});
