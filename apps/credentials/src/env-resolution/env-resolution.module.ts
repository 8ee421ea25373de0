import { Module } from '@nestjs/common';
import { SandboxConfigsModule } from '../sandbox-configs/sandbox-configs.module';
import { SecretsModule } from '../secrets/secrets.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { EnvResolutionController } from './env-resolution.controller';
import { EnvResolutionService } from './env-resolution.service';

@Module({
  imports: [SecretsModule, WebhooksModule, SandboxConfigsModule],
  controllers: [EnvResolutionController],
  providers: [EnvResolutionService],
})
export class EnvResolutionModule {}
