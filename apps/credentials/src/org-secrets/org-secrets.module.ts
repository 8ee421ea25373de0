import { Module } from '@nestjs/common';
import { SecretsModule } from '../secrets/secrets.module';
import { OrgSecretsController } from './org-secrets.controller';

@Module({ imports: [SecretsModule], controllers: [OrgSecretsController] })
export class OrgSecretsModule {}
