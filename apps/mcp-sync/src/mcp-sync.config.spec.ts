import { loadMcpSyncConfig } from './mcp-sync.config';

describe('mcp-sync config', () => {
  const key = Buffer.alloc(32, 7).toString('base64');

  it('enables stdio by default in development only', () => {
    expect(loadMcpSyncConfig({ TOOLPLANE_PROFILE: 'development' }).MCP_STDIO_ENABLED).toBe(true);
    expect(loadMcpSyncConfig({ TOOLPLANE_PROFILE: 'production', MCP_ENCRYPTION_KEY: key }).MCP_STDIO_ENABLED).toBe(false);
    expect(loadMcpSyncConfig({ TOOLPLANE_PROFILE: 'production', MCP_ENCRYPTION_KEY: key, MCP_STDIO_ENABLED: 'true' }).MCP_STDIO_ENABLED).toBe(true);
  });

  it('requires a 32-byte key in production and parses the allowlist', () => {
    expect(() => loadMcpSyncConfig({ TOOLPLANE_PROFILE: 'production' })).toThrow(/MCP_ENCRYPTION_KEY: required in production/);
    expect(() => loadMcpSyncConfig({ MCP_ENCRYPTION_KEY: 'c2hvcnQ=' })).toThrow(/32 bytes/);
    expect(loadMcpSyncConfig({ MCP_ENCRYPTION_KEY_FILE: '/run/key', MCP_ALLOWED_HOSTS: 'mcp.internal, 10.0.0.0/8' })).toMatchObject({ MCP_ALLOWED_HOSTS: ['mcp.internal', '10.0.0.0/8'] });
  });
});
