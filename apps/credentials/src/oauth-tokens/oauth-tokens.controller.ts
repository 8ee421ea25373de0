import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  McpOAuthTokensDelete,
  McpOAuthTokensFetch,
  McpOAuthTokensList,
  McpOAuthTokensStore,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { OAuthTokensService } from './oauth-tokens.service';

/** Internal: mcp-sync's OAuth token store. */
@Controller()
export class OAuthTokensController {
  constructor(private readonly tokens: OAuthTokensService) {}

  @Handles(McpOAuthTokensStore)
  store(@Payload() req: RequestOf<typeof McpOAuthTokensStore>): Promise<ReplyOf<typeof McpOAuthTokensStore>> {
    return this.tokens.store(req);
  }

  @Handles(McpOAuthTokensFetch)
  fetch(@Payload() req: RequestOf<typeof McpOAuthTokensFetch>): Promise<ReplyOf<typeof McpOAuthTokensFetch>> {
    return this.tokens.fetch(req);
  }

  @Handles(McpOAuthTokensDelete)
  delete(@Payload() req: RequestOf<typeof McpOAuthTokensDelete>): Promise<ReplyOf<typeof McpOAuthTokensDelete>> {
    return this.tokens.delete(req);
  }

  @Handles(McpOAuthTokensList)
  list(@Payload() req: RequestOf<typeof McpOAuthTokensList>): Promise<ReplyOf<typeof McpOAuthTokensList>> {
    return this.tokens.list(req);
  }
}
