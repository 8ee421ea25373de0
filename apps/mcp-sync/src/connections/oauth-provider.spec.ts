import { canonicalResource, McpOAuthProvider, type OAuthAuth, type OAuthState } from './oauth-provider';

const noTokens = { load: async () => undefined, save: async () => undefined };

function provider(auth: Partial<OAuthAuth>, state: OAuthState = {}): McpOAuthProvider {
  return new McpOAuthProvider({
    auth: { type: 'oauth', ...auth } as OAuthAuth,
    state,
    redirectUri: 'http://localhost/cb',
    tokens: noTokens,
    clientMetadataUrl: 'https://tp.example/client.json',
  });
}

describe('McpOAuthProvider', () => {
  it('binds the resource to the server: its canonical URI, or metadata that covers it; another server is refused', async () => {
    expect(canonicalResource('https://mcp.example/mcp#frag').href).toBe('https://mcp.example/mcp');
    const state: OAuthState = {};
    const p = provider({}, state);
    expect((await p.validateResourceURL('https://mcp.example/mcp')).href).toBe('https://mcp.example/mcp');
    expect((await p.validateResourceURL('https://mcp.example/mcp', 'https://mcp.example/')).href).toBe(
      'https://mcp.example/',
    );
    expect(state.resource).toBe('https://mcp.example/');
    await expect(p.validateResourceURL('https://mcp.example/mcp', 'https://evil.example/mcp')).rejects.toMatchObject({
      code: 'MCP_OAUTH_FAILED',
    });
    await expect(p.validateResourceURL('https://mcp.example/mcp', 'https://mcp.example/other')).rejects.toMatchObject({
      code: 'MCP_OAUTH_FAILED',
    });
  });

  it('configured endpoints override discovered ones, and tokens stay keyed as before discovery existed', () => {
    const discovered: OAuthState = {
      discovery: {
        authorizationServerUrl: 'https://as.example/',
        authorizationServerMetadata: {
          issuer: 'https://as.example/',
          authorization_endpoint: 'https://as.example/authorize',
          token_endpoint: 'https://as.example/token',
          response_types_supported: ['code'],
        },
      },
    };
    expect(provider({}, discovered).discoveryState()).toBe(discovered.discovery);
    const explicit = provider(
      { token_url: 'https://other.example/oauth/token', token_endpoint_auth_method: 'client_secret_post' },
      discovered,
    ).discoveryState()!;
    expect(explicit.authorizationServerUrl).toBe('https://other.example/oauth/token');
    expect(explicit.authorizationServerMetadata).toMatchObject({
      token_endpoint: 'https://other.example/oauth/token',
      authorization_endpoint: 'https://as.example/authorize',
      token_endpoint_auth_methods_supported: ['client_secret_post'],
    });
    expect(provider({ token_url: 'https://other.example/t' }, discovered).rediscoverable()).toBe(false);
    expect(provider({}, discovered).rediscoverable()).toBe(true);
  });

  it('registers asking for the best method the server lists (confidential first), and offers its metadata document only without a client id', () => {
    const state: OAuthState = {
      discovery: {
        authorizationServerUrl: 'https://as.example/',
        authorizationServerMetadata: {
          issuer: 'x',
          authorization_endpoint: 'a',
          token_endpoint: 't',
          response_types_supported: ['code'],
          token_endpoint_auth_methods_supported: ['none', 'client_secret_post'],
        },
      },
    };
    const p = provider({}, state);
    expect(p.clientMetadata.token_endpoint_auth_method).toBe('client_secret_post');
    expect(p.clientMetadataUrl).toBe('https://tp.example/client.json');
    expect(provider({ client_id: 'mine' }, state).clientMetadataUrl).toBeUndefined();
    expect(provider({ token_endpoint_auth_method: 'none' }, state).clientMetadata.token_endpoint_auth_method).toBe(
      'none',
    );
  });

  it('a configured client is used as given and never overwritten by a registration; a registered one is kept in the state', () => {
    const state: OAuthState = {};
    const configured = provider({ client_id: 'mine', client_secret: 's3cret' }, state);
    configured.saveClientInformation({ client_id: 'registered' });
    expect(configured.clientInformation()).toEqual({ client_id: 'mine', client_secret: 's3cret' });
    expect(state.client).toBeUndefined();
    const registering = provider({}, state);
    registering.saveClientInformation({ client_id: 'registered' });
    expect(state.client).toEqual({ client_id: 'registered' });
    expect(registering.changed).toBe(true);
  });

  it('client credentials ask for their grant and scope; authorization code leaves the request to the SDK', () => {
    expect(
      provider({ grant_type: 'client_credentials', client_id: 'c', client_secret: 's' })
        .prepareTokenRequest('read')
        ?.toString(),
    ).toBe('grant_type=client_credentials&scope=read');
    expect(provider({}).prepareTokenRequest('read')).toBeUndefined();
    expect(
      provider({ grant_type: 'client_credentials', client_id: 'c', client_secret: 's' }).redirectUrl,
    ).toBeUndefined();
  });
});
