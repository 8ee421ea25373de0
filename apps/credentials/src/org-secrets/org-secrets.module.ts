import { Module } from '@nestjs/common';
import { SecretsModule } from '../secrets/secrets.module';
import { OrgSecretsController } from './org-secrets.controller';
import { OrgSecretsService } from './org-secrets.service';

@Module({ imports: [SecretsModule], controllers: [OrgSecretsController], providers: [OrgSecretsService] })
export class OrgSecretsModule {}
