import { loadE2bRunnerConfig } from './runner-e2b.config';

describe('loadE2bRunnerConfig', () => {
  it('defaults: port 8087, no key of its own, tools dropped to an unprivileged uid, one watched home', () => {
    const sut = loadE2bRunnerConfig({});
    expect(sut.HEALTH_PORT).toBe(8087);
    expect(sut.E2B_API_KEY).toBeUndefined();
    expect(sut.E2B_COMMAND_USER).toBe('root');
    expect(sut.E2B_TOOL_UID).toBeGreaterThan(0);
    expect(sut.E2B_WATCH_PATHS).toContain('/home/user');
    expect(sut.E2B_NETWORK).toBe(false);
  });

  it('names every invalid variable, never its value', () => {
    expect(() => loadE2bRunnerConfig({ E2B_API_URL: 'not a url', E2B_TOOL_UID: '0', E2B_WATCH_PATHS: 'tmp' })).toThrow(
      /E2B_API_URL[\s\S]*E2B_TOOL_UID[\s\S]*E2B_WATCH_PATHS/,
    );
    expect(() => loadE2bRunnerConfig({ E2B_DEPLOYMENT: 'has space' })).toThrow(/E2B_DEPLOYMENT/);
  });
});
