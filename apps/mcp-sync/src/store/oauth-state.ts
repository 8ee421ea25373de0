import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed } from '@modelcontextprotocol/sdk/shared/auth.js';

/**
 * What Toolplane learned about an MCP server's authorization and keeps with the server (sealed
 * with its other secrets): the discovered metadata, the client it registered (DCR or a Client ID
 * Metadata Document), and the RFC 8707 resource its tokens are bound to.
 */
export interface OAuthState {
  discovery?: OAuthDiscoveryState;
  client?: OAuthClientInformationMixed & { issuer?: string };
  /** The resource indicator every authorization and token request carried. */
  resource?: string;
}
