import { All, Controller, Get, Param, Req, Res } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { OidcMetadata } from '../auth/oidc-metadata';
import { McpHttpService } from './mcp-http.service';

/** The MCP endpoints and their protected resource metadata (RFC 9728): routes only, the work is in McpHttpService. */
@Controller()
export class McpController {
  constructor(
    private readonly http: McpHttpService,
    private readonly oidc: OidcMetadata,
  ) {}

  @All('mcp/agents/:id')
  agent(@Param('id') id: string, @Req() req: IncomingMessage, @Res() res: ServerResponse): Promise<void> {
    return this.http.handle(req, res, { kind: 'agent', id });
  }

  @All('mcp/toolsets/:id')
  toolset(@Param('id') id: string, @Req() req: IncomingMessage, @Res() res: ServerResponse): Promise<void> {
    return this.http.handle(req, res, { kind: 'toolset', id });
  }

  @Get('.well-known/oauth-protected-resource/mcp/:kind/:id')
  metadata(
    @Param('kind') kind: string,
    @Param('id') id: string,
    @Req() req: IncomingMessage,
    @Res() res: ServerResponse,
  ): void {
    if (kind !== 'agents' && kind !== 'toolsets')
      return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
    const body = this.http.protectedResourceMetadata(
      req,
      { kind: kind === 'agents' ? 'agent' : 'toolset', id },
      this.oidc.authorizationServers(),
    );
    res
      .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' })
      .end(JSON.stringify(body));
  }
}
