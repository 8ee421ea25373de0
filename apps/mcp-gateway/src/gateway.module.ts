import { Module } from '@nestjs/common';
import { APP_CONFIG } from '@toolplane/platform';
import { GatewayAuth, OIDC_VERIFIER } from './auth/gateway-auth';
import { OidcMetadata } from './auth/oidc-metadata';
import { OidcVerifier } from './auth/oidc-verifier';
import { CallToolService } from './calls/call-tool.service';
import { ConnectionWaits } from './calls/connection-waits';
import { McpController } from './http/mcp.controller';
import { McpHttpService } from './http/mcp-http.service';
import { McpServerFactory } from './mcp/mcp-server.factory';
import { LiveSessions } from './sessions/live-sessions';
import { SessionStore } from './sessions/session-store';
import { StreamEventsRepository } from './streams/stream-events.repository';
import { StreamResumeService } from './streams/stream-resume.service';
import { EndpointToolsService } from './tools/endpoint-tools.service';
import type { GatewayConfig } from './mcp-gateway.config';

@Module({
  controllers: [McpController],
  providers: [
    // JWTs of the configured identity providers (GATEWAY_OIDC_ISSUERS); none configured: org tokens only.
    {
      provide: OIDC_VERIFIER,
      inject: [APP_CONFIG],
      useFactory: (config: GatewayConfig) => OidcVerifier.fromConfig(config),
    },
    GatewayAuth,
    OidcMetadata,
    SessionStore,
    LiveSessions,
    EndpointToolsService,
    ConnectionWaits,
    CallToolService,
    McpServerFactory,
    StreamEventsRepository,
    StreamResumeService,
    McpHttpService,
  ],
})
export class GatewayModule {}
