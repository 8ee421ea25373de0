import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  SandboxConfigsGet,
  SandboxConfigsList,
  SandboxConfigsUpsert,
  type ReplyOf,
  type RequestOf,
} from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { SandboxConfigsService } from './sandbox-configs.service';

@Controller()
export class SandboxConfigsController {
  constructor(private readonly configs: SandboxConfigsService) {}

  @Handles(SandboxConfigsUpsert)
  upsert(@Payload() req: RequestOf<typeof SandboxConfigsUpsert>): Promise<ReplyOf<typeof SandboxConfigsUpsert>> {
    return this.configs.upsert(req);
  }

  @Handles(SandboxConfigsGet)
  get(@Payload() req: RequestOf<typeof SandboxConfigsGet>): Promise<ReplyOf<typeof SandboxConfigsGet>> {
    return this.configs.get(req);
  }

  @Handles(SandboxConfigsList)
  list(@Payload() req: RequestOf<typeof SandboxConfigsList>): Promise<ReplyOf<typeof SandboxConfigsList>> {
    return this.configs.list(req);
  }
}
