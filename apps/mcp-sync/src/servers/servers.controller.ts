import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { McpOAuthComplete, McpServersAdd, McpServersGet, McpServersList, McpServersRemove, McpServersSync, McpServersUpdate, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { ServersService } from './servers.service';

@Controller()
export class ServersController {
  constructor(private readonly servers: ServersService) {}

  @Handles(McpServersAdd)
  add(@Payload() req: RequestOf<typeof McpServersAdd>): Promise<ReplyOf<typeof McpServersAdd>> {
    return this.servers.add(req);
  }

  @Handles(McpServersGet)
  get(@Payload() req: RequestOf<typeof McpServersGet>): Promise<ReplyOf<typeof McpServersGet>> {
    return this.servers.get(req);
  }

  @Handles(McpServersList)
  list(@Payload() req: RequestOf<typeof McpServersList>): Promise<ReplyOf<typeof McpServersList>> {
    return this.servers.list(req);
  }

  @Handles(McpServersUpdate)
  update(@Payload() req: RequestOf<typeof McpServersUpdate>): Promise<ReplyOf<typeof McpServersUpdate>> {
    return this.servers.update(req);
  }

  @Handles(McpServersRemove)
  remove(@Payload() req: RequestOf<typeof McpServersRemove>): Promise<ReplyOf<typeof McpServersRemove>> {
    return this.servers.remove(req);
  }

  @Handles(McpServersSync)
  sync(@Payload() req: RequestOf<typeof McpServersSync>): Promise<ReplyOf<typeof McpServersSync>> {
    return this.servers.syncNow(req);
  }

  @Handles(McpOAuthComplete)
  completeOAuth(@Payload() req: RequestOf<typeof McpOAuthComplete>): Promise<ReplyOf<typeof McpOAuthComplete>> {
    return this.servers.completeOAuth(req);
  }
}
