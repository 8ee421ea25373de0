import { Module } from '@nestjs/common';
import { SecretsModule } from '../secrets/secrets.module';
import { SandboxConfigsController } from './sandbox-configs.controller';
import { SandboxConfigsRepository } from './sandbox-configs.repository';
import { SandboxConfigsService } from './sandbox-configs.service';

@Module({
  imports: [SecretsModule],
  controllers: [SandboxConfigsController],
  providers: [SandboxConfigsService, SandboxConfigsRepository],
  exports: [SandboxConfigsService],
})
export class SandboxConfigsModule {}
