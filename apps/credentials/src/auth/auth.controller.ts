import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  AuthOrgsDelete,
  AuthStateGet,
  AuthTokensCreate,
  AuthTokensList,
  AuthTokensRevoke,
  type Principal,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { Caller, Handles } from '@toolplane/messaging';
import { AuthService } from './auth.service';

@Controller()
export class AuthController {
  constructor(private readonly auth: AuthService) {}

  @Handles(AuthTokensCreate)
  create(
    @Payload() req: RequestOf<typeof AuthTokensCreate>,
    @Caller() caller: Principal,
  ): Promise<ReplyOf<typeof AuthTokensCreate>> {
    return this.auth.create(caller, req);
  }

  @Handles(AuthTokensList)
  list(@Payload() req: RequestOf<typeof AuthTokensList>): Promise<ReplyOf<typeof AuthTokensList>> {
    return this.auth.list(req);
  }

  @Handles(AuthTokensRevoke)
  revoke(@Payload() req: RequestOf<typeof AuthTokensRevoke>): Promise<ReplyOf<typeof AuthTokensRevoke>> {
    return this.auth.revoke(req);
  }

  @Handles(AuthOrgsDelete)
  deleteOrg(
    @Payload() req: RequestOf<typeof AuthOrgsDelete>,
    @Caller() caller: Principal,
  ): Promise<ReplyOf<typeof AuthOrgsDelete>> {
    return this.auth.deleteOrg(caller, req);
  }

  @Handles(AuthStateGet)
  state(@Payload() req: RequestOf<typeof AuthStateGet>): Promise<ReplyOf<typeof AuthStateGet>> {
    return this.auth.state(req);
  }
}
