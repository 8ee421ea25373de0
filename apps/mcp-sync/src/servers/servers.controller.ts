import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  McpOAuthComplete,
  McpServersAdd,
  McpServersGet,
  McpServersList,
  McpServersRemove,
  McpServersSync,
  McpServersUpdate,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { AddServer } from './add-server';
import { CompleteAuthorization } from './complete-authorization';
import { RemoveServer } from './remove-server';
import { ServerQueries } from './server-queries';
import { UpdateServer } from './update-server';

@Controller()
export class ServersController {
  constructor(
    private readonly adding: AddServer,
    private readonly authorizing: CompleteAuthorization,
    private readonly updating: UpdateServer,
    private readonly removing: RemoveServer,
    private readonly queries: ServerQueries,
  ) {}

  @Handles(McpServersAdd)
  add(@Payload() req: RequestOf<typeof McpServersAdd>): Promise<ReplyOf<typeof McpServersAdd>> {
    return this.adding.add(req);
  }

  @Handles(McpServersGet)
  get(@Payload() req: RequestOf<typeof McpServersGet>): Promise<ReplyOf<typeof McpServersGet>> {
    return this.queries.get(req);
  }

  @Handles(McpServersList)
  list(@Payload() req: RequestOf<typeof McpServersList>): Promise<ReplyOf<typeof McpServersList>> {
    return this.queries.list(req);
  }

  @Handles(McpServersUpdate)
  update(@Payload() req: RequestOf<typeof McpServersUpdate>): Promise<ReplyOf<typeof McpServersUpdate>> {
    return this.updating.update(req);
  }

  @Handles(McpServersRemove)
  remove(@Payload() req: RequestOf<typeof McpServersRemove>): Promise<ReplyOf<typeof McpServersRemove>> {
    return this.removing.remove(req);
  }

  @Handles(McpServersSync)
  sync(@Payload() req: RequestOf<typeof McpServersSync>): Promise<ReplyOf<typeof McpServersSync>> {
    return this.queries.syncNow(req);
  }

  @Handles(McpOAuthComplete)
  completeOAuth(@Payload() req: RequestOf<typeof McpOAuthComplete>): Promise<ReplyOf<typeof McpOAuthComplete>> {
    return this.authorizing.completeOAuth(req);
  }
}
