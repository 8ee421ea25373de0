import { Module } from '@nestjs/common';
import { GatewayAuth } from './auth/gateway-auth';
import { OidcMetadata } from './auth/oidc-metadata';
import { CallToolService } from './calls/call-tool.service';
import { McpController } from './http/mcp.controller';
import { McpHttpService } from './http/mcp-http.service';
import { McpServerFactory } from './mcp/mcp-server.factory';
import { LiveSessions } from './sessions/live-sessions';
import { SessionStore } from './sessions/session-store';
import { EndpointToolsService } from './tools/endpoint-tools.service';

@Module({
  controllers: [McpController],
  providers: [GatewayAuth, OidcMetadata, SessionStore, LiveSessions, EndpointToolsService, CallToolService, McpServerFactory, McpHttpService],
})
export class GatewayModule {}
