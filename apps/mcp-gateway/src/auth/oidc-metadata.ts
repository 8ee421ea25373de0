import { Injectable } from '@nestjs/common';

/** The authorization servers (OIDC issuers) an operator configured, for protected resource metadata. */
@Injectable()
export class OidcMetadata {
  authorizationServers(): string[] {
    return [];
  }
}
