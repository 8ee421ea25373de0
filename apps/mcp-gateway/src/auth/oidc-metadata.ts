import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@toolplane/platform';
import type { GatewayConfig } from '../mcp-gateway.config';

/** The authorization servers (OIDC issuers) an operator configured, for protected resource metadata. */
@Injectable()
export class OidcMetadata {
  constructor(@Inject(APP_CONFIG) private readonly config: GatewayConfig) {}

  authorizationServers(): string[] {
    return this.config.GATEWAY_OIDC_ISSUERS.map((i) => i.issuer);
  }
}
