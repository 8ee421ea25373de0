import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { ConnectionsGet, ConnectionsList, ConnectionsRevoke, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { AccountQueries } from './account-queries';
import { RevokeAccount } from './revoke-account';

/** Connected accounts of end users on the org's MCP servers (connections.*). */
@Controller()
export class AccountsController {
  constructor(
    private readonly queries: AccountQueries,
    private readonly revoking: RevokeAccount,
  ) {}

  @Handles(ConnectionsList)
  list(@Payload() req: RequestOf<typeof ConnectionsList>): Promise<ReplyOf<typeof ConnectionsList>> {
    return this.queries.list(req);
  }

  @Handles(ConnectionsGet)
  async get(@Payload() req: RequestOf<typeof ConnectionsGet>): Promise<ReplyOf<typeof ConnectionsGet>> {
    return { connection: await this.queries.one(req.org_id, req.user_id, req.server) };
  }

  @Handles(ConnectionsRevoke)
  revoke(@Payload() req: RequestOf<typeof ConnectionsRevoke>): Promise<ReplyOf<typeof ConnectionsRevoke>> {
    return this.revoking.revoke(req);
  }
}
