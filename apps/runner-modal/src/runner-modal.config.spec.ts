import { loadModalRunnerConfig } from './runner-modal.config';

describe('loadModalRunnerConfig', () => {
  it('defaults: port 8088, no token of its own, no network, one warm sandbox, tools dropped to an unprivileged uid', () => {
    const sut = loadModalRunnerConfig({});
    expect(sut.HEALTH_PORT).toBe(8088);
    expect(sut.MODAL_TOKEN_ID).toBeUndefined();
    expect(sut.MODAL_NETWORK).toBe(false);
    expect(sut.MODAL_WARM_SANDBOXES).toBe(1);
    // One org cannot take every sandbox: its bound is below the global one.
    expect(sut.MODAL_MAX_SANDBOXES_PER_ORG).toBeLessThan(sut.MODAL_MAX_SANDBOXES);
    expect(sut.MODAL_NODE_INSTALL).toContain('nodejs');
    expect(sut.MODAL_TOOL_UID).toBeGreaterThan(0);
    expect(sut.MODAL_WATCH_PATHS).toContain('/tmp');
  });

  it('names every invalid variable', () => {
    expect(() =>
      loadModalRunnerConfig({ MODAL_SERVER_URL: 'not a url', MODAL_TOOL_UID: '0', MODAL_WATCH_PATHS: 'tmp' }),
    ).toThrow(/MODAL_SERVER_URL[\s\S]*MODAL_TOOL_UID[\s\S]*MODAL_WATCH_PATHS/);
    expect(() => loadModalRunnerConfig({ MODAL_DEPLOYMENT: 'has space' })).toThrow(/MODAL_DEPLOYMENT/);
  });
});
