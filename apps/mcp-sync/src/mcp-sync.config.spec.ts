import { loadMcpSyncConfig } from './mcp-sync.config';

describe('mcp-sync config', () => {
  const key = Buffer.alloc(32, 7).toString('base64');

  it('enables stdio by default in development only', () => {
    expect(loadMcpSyncConfig({ TOOLPLANE_PROFILE: 'development' }).MCP_STDIO_ENABLED).toBe(true);
    expect(loadMcpSyncConfig({ TOOLPLANE_PROFILE: 'production', MCP_ENCRYPTION_KEY: key }).MCP_STDIO_ENABLED).toBe(
      false,
    );
    expect(
      loadMcpSyncConfig({ TOOLPLANE_PROFILE: 'production', MCP_ENCRYPTION_KEY: key, MCP_STDIO_ENABLED: 'true' })
        .MCP_STDIO_ENABLED,
    ).toBe(true);
  });

  it('needs no key of its own in production (secrets are sealed under the credentials key ring); a legacy key is 32 bytes; parses the allowlist', () => {
    expect(loadMcpSyncConfig({ TOOLPLANE_PROFILE: 'production' }).MCP_ENCRYPTION_KEY).toBeUndefined();
    expect(() => loadMcpSyncConfig({ MCP_ENCRYPTION_KEY: 'c2hvcnQ=' })).toThrow(/32 bytes/);
    expect(
      loadMcpSyncConfig({ MCP_ENCRYPTION_KEY_FILE: '/run/key', MCP_ALLOWED_HOSTS: 'mcp.internal, 10.0.0.0/8' }),
    ).toMatchObject({ MCP_ALLOWED_HOSTS: ['mcp.internal', '10.0.0.0/8'] });
  });

  it('bounds the registry message size and the server cache TTL', () => {
    const dev = { TOOLPLANE_PROFILE: 'development' };
    expect(loadMcpSyncConfig(dev)).toMatchObject({ MCP_SYNC_MESSAGE_BYTES: 512 * 1024, MCP_SERVER_CACHE_TTL_MS: 2000 });
    expect(loadMcpSyncConfig({ ...dev, MCP_SYNC_MESSAGE_BYTES: '65536', MCP_SERVER_CACHE_TTL_MS: '0' })).toMatchObject({
      MCP_SYNC_MESSAGE_BYTES: 65536,
      MCP_SERVER_CACHE_TTL_MS: 0,
    });
    expect(() => loadMcpSyncConfig({ ...dev, MCP_SYNC_MESSAGE_BYTES: '1000' })).toThrow(/MCP_SYNC_MESSAGE_BYTES/);
    expect(() => loadMcpSyncConfig({ ...dev, MCP_SYNC_MESSAGE_BYTES: String(128 * 1024 * 1024) })).toThrow(
      /MCP_SYNC_MESSAGE_BYTES/,
    );
    expect(() => loadMcpSyncConfig({ ...dev, MCP_SERVER_CACHE_TTL_MS: '-1' })).toThrow(/MCP_SERVER_CACHE_TTL_MS/);
  });
});
