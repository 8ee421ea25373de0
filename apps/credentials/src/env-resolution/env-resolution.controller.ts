import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { ExecutionEnvResolve, type ReplyOf, type RequestOf } from '@toolplane/contracts';
import { Handles } from '@toolplane/messaging';
import { EnvResolutionService } from './env-resolution.service';

@Controller()
export class EnvResolutionController {
  constructor(private readonly resolution: EnvResolutionService) {}

  @Handles(ExecutionEnvResolve)
  resolve(@Payload() req: RequestOf<typeof ExecutionEnvResolve>): Promise<ReplyOf<typeof ExecutionEnvResolve>> {
    return this.resolution.resolve(req);
  }
}
